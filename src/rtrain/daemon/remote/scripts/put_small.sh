# rtrain-needs: cache
# put_small.sh WORKDIR RUN_DIR: a few small inputs on stdin, each a line `SHA256<TAB>SIZE<TAB>NAME`
# then a line of its bytes in base64: text, so it travels through a long-lived shell as a
# here-document (one round trip, where a byte stream takes a channel of its own: two). Each
# whose bytes are its sha256 and size enters the work directory's cache and is placed in the
# run directory as NAME, the run's own copy (`placed NAME copied`); any other is `mismatch
# NAME` (exit 3, nothing under that name). One python3 does it all (cache_inputs.py small);
# without python3: `error no_python`, and the daemon sends them as it sends any input.
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$(expand_workdir "$2") || fail "$E_USAGE" bad_dest
[ -d "$run_dir" ] || fail "$E_NOT_FOUND" run_not_found
have python3 || fail "$E_USAGE" no_python
cache_dirs "$workdir"
# daemon/remote/cache_inputs.py: the daemon puts its text in place of the word below.
CACHE_PROGRAM='@cache_inputs.py@'
exec python3 -c "$CACHE_PROGRAM" small "$CACHE_DIR" "$run_dir"
