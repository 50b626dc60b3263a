# rtrain-needs: run_paths hashing
# file_state.sh RUN_DIR REL [sha256]: `state SIZE STATE` of the run's file REL (STATE: a
# file_state line, which moves whenever the content may have); with `sha256`, also `sha256
# DIGEST`, and `changed REL` (exit 3) if the file moved while it was hashed.
need_args "$#" 2
run_file "$1" "$2"
before=$(file_state "$REAL_PATH") || fail "$E_IO" unreadable "$(flat "$2")"
size=$(size_of "$REAL_PATH") || fail "$E_IO" unreadable "$(flat "$2")"
emit state "$size" "$before"
if [ "${3-}" = sha256 ]; then
	digest=$(sha256_of "$REAL_PATH") || fail "$E_IO" unreadable "$(flat "$2")"
	[ "$(file_state "$REAL_PATH")" = "$before" ] || fail "$E_MISMATCH" changed "$(flat "$2")"
	emit sha256 "$digest"
fi
exit 0
