# rtrain-needs: run_paths hashing
# send.sh RUN_DIR REL_PATH: the file's bytes on stdout, hashed as they leave, so the file is read
# once. After the bytes, one machine line on stderr says what they were:
#   sent<TAB>SHA256       the sha256 of exactly the bytes sent; the file did not change meanwhile
#   changed<TAB>REL_PATH  its size, mtime or inode moved while it was read (exit 3): not a copy
#   error<TAB>unreadable<TAB>REL_PATH  the read or the hash failed (exit 14)
# A refusal (path checks) comes before any byte: one `error` line on stdout, as in list_files.
need_args "$#" 2
run_file "$1" "$2"

# The machine line first: the daemon shows the last line of stderr, the human one.
unreadable() {
	emit error unreadable "$(flat "$1")" >&2
	say "${TH_NOTE:-cannot read or hash $1}"
	exit "$E_IO"
}

TH_NOTE=''
before=$(file_state "$REAL_PATH") || unreadable "$2"
# The resolved path, so a link swapped after the check still cannot lead outside.
if have tee && fd_by_name; then
	# tee copies the file to our stdout (fd 3 here) and to the hasher (/dev/fd/4).
	exec 3>&1
	sums=$({
		{ tee /dev/fd/4 4>&1 >&3 3>&- 2>&5 <"$REAL_PATH"; printf 'tee %s\n' "$?" >&5; } |
			sha256_of /dev/stdin
	} 5>&1 2>&1)
	split_sums "$sums"
	if [ "$TH_OK" != 1 ] || [ -z "$TH_DIGEST" ]; then
		unreadable "$2"
	fi
	digest=$TH_DIGEST
else
	# No tee, or no /dev/fd to reach the hasher by name: send, then hash a second read. The
	# state check below spans both reads, so they saw the same bytes.
	cat -- "$REAL_PATH" || unreadable "$2"
	digest=$(sha256_of "$REAL_PATH") || unreadable "$2"
fi
after=$(file_state "$REAL_PATH") || unreadable "$2"
if [ "$after" != "$before" ]; then
	emit changed "$(flat "$2")" >&2
	say "$(flat "$2") changed while it was read"
	exit "$E_MISMATCH"
fi
emit sent "$digest" >&2
exit 0
