# send.sh RUN_DIR REL_PATH: the file's bytes on stdout (on error: an error line, non-zero exit).
need_args "$#" 2
run_file "$1" "$2"
# The resolved path, so a link swapped after the check still cannot lead outside.
exec cat -- "$REAL_PATH"
