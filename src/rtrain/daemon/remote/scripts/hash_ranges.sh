# rtrain-needs: run_paths hashing
# hash_ranges.sh RUN_DIR REL STATE OFFSET LENGTH [OFFSET LENGTH]...: `range OFFSET LENGTH
# SHA256` for each byte range of the run's file REL, while the file still is what STATE (a
# file_state line) says, as send_range.sh; `changed REL` (exit 3) when it moved before or
# during. A resumed fetch asks it for the bytes of a cut piece that already landed at home:
# it keeps them only when their sha256 is the far file's. A striped fetch asks it for the
# whole file (0 and its size), the sha256 of the copy its verified pieces make up.
need_args "$#" 5
run_file "$1" "$2"
hr_rel=$2
hr_state=$3
shift 3
[ "$(file_state "$REAL_PATH")" = "$hr_state" ] || fail "$E_MISMATCH" changed "$(flat "$hr_rel")"
while [ "$#" -ge 2 ]; do
	{ is_uint "$1" && is_uint "$2"; } || fail "$E_USAGE" usage
	# The resolved path, so a swapped link cannot lead outside. The whole file is hashed
	# straight from it; a range through tail, which seeks in a regular file.
	if [ "$1" = 0 ] && [ "$2" = "$(size_of "$REAL_PATH")" ]; then
		hr_digest=$(sha256_of "$REAL_PATH")
	else
		hr_digest=$(tail -c "+$(($1 + 1))" -- "$REAL_PATH" | head -c "$2" | sha256_of /dev/stdin)
	fi || fail "$E_IO" unreadable "$(flat "$hr_rel")"
	emit range "$1" "$2" "$hr_digest"
	shift 2
done
[ "$(file_state "$REAL_PATH")" = "$hr_state" ] || fail "$E_MISMATCH" changed "$(flat "$hr_rel")"
exit 0
