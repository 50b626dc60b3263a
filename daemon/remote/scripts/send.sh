# send.sh RUN_DIR REL_PATH: the file's bytes on stdout (on error: an error line, non-zero exit).
need_args "$#" 2
take_run_dir "$1"
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
REAL_RUN=$(real_path "$RUN_DIR") || fail "$E_NOT_FOUND" run_not_found
normalize_rel "$2"
target=$RUN_DIR${REL:+/$REL}

inside_run "$target"
case $? in
1) fail "$E_OUTSIDE" path_outside_run "$(flat "$2")" ;;
2) fail "$E_NOT_FOUND" not_found "$(flat "$2")" ;;
esac
[ -e "$target" ] || fail "$E_NOT_FOUND" not_found "$(flat "$2")"
[ -f "$target" ] || fail "$E_NOT_FOUND" not_a_file "$(flat "$2")"
# The resolved path, so a link swapped after the check still cannot lead outside.
exec cat -- "$REAL_PATH"
