"""The contract with the far side: every script's arguments, machine lines and exit codes.

A far-side script prints `key<TAB>value...` lines on stdout (send.sh: its verdict on
stderr) and exits with one of lib/core.sh's `E_*` codes. This package is the only reader of
those lines, one module per family of scripts (runs, launches, files, preflight, guard;
each launcher's own scripts are read in its package's contract.py): each script has one
typed function that runs it through a transport (answers.Runner) and returns a Struct, and
the scripts the transports run themselves (receive, send, put_chunk, hash_file) are decoded
here too. What an answer *means* for a user (which error, which sentence) stays with the
operations. The contract imports no transport: the transports import it.
"""
