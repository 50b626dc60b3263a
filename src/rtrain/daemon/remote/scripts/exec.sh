# rtrain-needs: run_dir
# exec.sh RUN_DIR RUN_ID CMD...: run CMD in the run dir, with the caller's umask and stdin
# /dev/null. Once CMD is about to run, the first stdout line is `exec<TAB>started`; everything
# after it, and the exit status, are CMD's own. Before that line, the usual error lines.
need_args "$#" 3
take_run_dir "$1" "$2"
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
prove_run_dir "$2"
shift 2
cd "$RUN_DIR" || fail "$E_IO" cd "cannot enter the run directory"
command -v "$1" >/dev/null 2>&1 || fail "$E_NOT_FOUND" no_program "$(flat "$1")"
umask "$CALLER_UMASK"
emit exec started
exec "$@" </dev/null
