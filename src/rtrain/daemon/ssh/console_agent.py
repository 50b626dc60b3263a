"""The far half of the console transport: a small POSIX sh loop that runs in the console.

Start-up takes three steps. The daemon types one line (`bootstrap_line`) into whatever login
shell the gateway gives. It turns the terminal raw (no echo, no line editing, no signals, no
CR/LF translation) and replaces that shell with `sh`, which says `R`. The daemon sends
`BOOT <length>`, the loader says `L`, and only then does the agent's text follow; the agent
says `Y`. From then on nothing but the agent reads the terminal, and nothing the daemon
sends is ever consumed by anything but an exact read:

    HEADER (exactly HEADER_SIZE bytes, space-padded, ending in a newline), one of
        Q SEQ SCRIPT_SHA SCRIPT_LEN ARGS_SHA ARGS_LEN STDIN_SHA STDIN_LEN
        A SEQ       (send the answer of SEQ again)
        E           (leave: the console is being closed)
    then, after Q, three base64 blocks of the announced lengths: the script, its arguments
    as shell words, its stdin; each checked against its sha256 before anything runs.

`rt_read` (GNU `head -c`, else `dd iflag=fullblock`) never asks the terminal for more than
is left, so no read swallows the next request. A script already sent on this console is
cached by its sha256 and sent again only when the agent reports it missing.

Every answer is a marker line `RT:<token>:<seq>:<kind>[:field...]`; the token is random per
console, and the letters RT are printed from octal escapes, so echoed input can never look
like a marker:

    R loader ready      L send the agent    Y agent ready       X:why  agent cannot run here
    B a block arrived damaged          M script not cached  K request intact, now running
    O stdout follows (base64)          E stderr follows     Z:RC:STDOUT_SHA:STDERR_SHA done
    G that answer is gone (or that request never arrived)
"""

from __future__ import annotations

from functools import cache
from importlib import resources

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# Every request starts with a header line of exactly this many bytes (space-padded), which
# the agent reads exactly. The shell's `read` is no use in raw mode: bash's reads ahead on a
# terminal, swallowing the bytes after the line.
HEADER_SIZE = 256

# The `sh -c` body of the bootstrap line. It must survive being typed into bash, dash, zsh or
# fish unchanged: single-quoted once, no `!`, no newline.
_BOOTSTRAP_BODY = (
    'printf "\\n\\122\\124:%s:0:R\\n" "$1"; '
    "while IFS= read -r l; do case $l in BOOT*) break;; esac; done; "
    'printf "\\n\\122\\124:%s:0:L\\n" "$1"; '
    'eval "$(head -c "${l#BOOT }")"'
)


def bootstrap_line(token: str) -> bytes:
    """What the daemon types at the login prompt; answered by the `R` marker."""
    return f"stty raw -echo; exec sh -c '{_BOOTSTRAP_BODY}' rtrain {token}\n".encode()


def boot_line(token: str) -> bytes:
    """`BOOT <length of the agent>`, sent once `R` arrived; answered by `L`."""
    return b"BOOT %d\n" % len(agent_text(token).encode())


def boot_message(token: str) -> bytes:
    """The agent's text, sent once `L` arrived."""
    return agent_text(token).encode()


def agent_text(token: str) -> str:
    return _agent_template().replace("@TOKEN@", token).replace("@HEADER@", str(HEADER_SIZE))


@cache
def _agent_template() -> str:
    # console_agent.sh, sent as it is after a newline. It runs under `sh -c` via eval, so it is
    # kept free of tabs and of `~` at a line start (ssh's escape character is off anyway, see
    # console_session.py).
    return "\n" + (resources.files(__package__) / "console_agent.sh").read_text()
