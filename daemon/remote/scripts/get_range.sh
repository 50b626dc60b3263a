# get_range.sh RUN_DIR REL OFFSET LENGTH -> those bytes of the file, after send.sh's checks.
need_args "$#" 4
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
is_uint "$3" && is_uint "$4" || fail "$E_USAGE" usage
# tail seeks in a regular file; the resolved path, so a swapped link cannot lead outside.
tail -c "+$(($3 + 1))" -- "$REAL_PATH" | head -c "$4"
