# rtrain-needs: run_paths
# get_range.sh RUN_DIR REL OFFSET LENGTH -> those bytes of the file, after send.sh's checks.
need_args "$#" 4
run_file "$1" "$2"
{ is_uint "$3" && is_uint "$4"; } || fail "$E_USAGE" usage
# tail seeks in a regular file; the resolved path, so a swapped link cannot lead outside.
tail -c "+$(($3 + 1))" -- "$REAL_PATH" | head -c "$4"
