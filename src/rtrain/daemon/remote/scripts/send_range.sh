# rtrain-needs: run_paths hashing
# send_range.sh RUN_DIR REL OFFSET LENGTH STATE: LENGTH bytes of the run's file REL from OFFSET
# on stdout, hashed as they leave (as send.sh), while the file still is what STATE (a
# file_state line, from file_state.sh) says: `sent SHA256` on stderr after the bytes, or
# `changed REL` (exit 3) when it moved before or during the read.
need_args "$#" 5
RANGE_PROGRAM='@range_mover.py@'
run_file "$1" "$2"
{ is_uint "$3" && is_uint "$4"; } || fail "$E_USAGE" usage
changed() {
	emit changed "$(flat "$2")" >&2
	exit "$E_MISMATCH"
}
[ "$(file_state "$REAL_PATH")" = "$5" ] || changed "$@"
# The resolved path, so a swapped link cannot lead outside.
if have python3; then
	# One process reads, hashes and sends each byte (range_mover.py); its digest on fd 3.
	exec 4>&1
	if sums=$(python3 -c "$RANGE_PROGRAM" send "$REAL_PATH" "$3" "$4" 3>&1 >&4 4>&- 2>/dev/null) &&
		is_digest "$sums"; then
		TH_DIGEST=$sums TH_OK=1
	else
		TH_DIGEST='' TH_OK=0
	fi
else
	{ have tee && fd_by_name; } || fail "$E_USAGE" no_tee
	# tail seeks in a regular file.
	exec 3>&1
	sums=$({
		{ tail -c "+$(($3 + 1))" -- "$REAL_PATH" 2>&5 | head -c "$4" | tee /dev/fd/4 4>&1 >&3 3>&- 2>&5; printf 'tee %s\n' "$?" >&5; } |
			sha256_of /dev/stdin
	} 5>&1 2>&1)
	split_sums "$sums"
fi
if [ "$TH_OK" != 1 ] || [ -z "$TH_DIGEST" ]; then
	emit error unreadable "$(flat "$2")" >&2
	exit "$E_IO"
fi
[ "$(file_state "$REAL_PATH")" = "$5" ] || changed "$@"
emit sent "$TH_DIGEST" >&2
exit 0
