# rtrain-needs: hashing
# receive.sh DEST_ABS_PATH EXPECTED_SHA256: stdin -> DEST, kept only if its sha256 matches.
# The bytes are hashed as they are written (tee feeds the hasher), so they are read once.
need_args "$#" 2
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
expected=$(printf '%s' "$2" | tr 'A-F' 'a-f')
part=$dest.part

write_failed() {
	rm -f -- "$part"
	say "$1"
	fail "$E_WRITE" write "$(flat "$1")"
}

if [ -d "$dest" ]; then
	say "$dest is a directory"
	fail "$E_WRITE" write "destination is a directory"
fi
if ! have tee || ! fd_by_name; then
	# No tee, or no /dev/stdin for the hasher: write, then hash a second read (keep_part).
	# cat reports a full disk or a missing directory on stderr; keep its words for the daemon.
	msg=$({ cat >"$part"; } 2>&1) || write_failed "$msg"
	keep_part "$part" "$dest" "$expected"
fi
# The part exists before the copy starts, so a missing directory fails at once, in the
# shell's words, before any byte is taken from the daemon.
msg=$({ : >"$part"; } 2>&1) || write_failed "$msg"
# tee hands the bytes to cat, which writes the part, and a copy to the hasher (/dev/fd/4). cat
# quits on a full disk, and tee with it, so the daemon learns of it without sending the rest.
sums=$({
	{
		{ tee /dev/fd/4 2>&5; printf 'tee %s\n' "$?" >&5; } |
			{ cat >"$part" 2>&5; printf 'cat %s\n' "$?" >&5; }
	} 4>&1 | sha256_of /dev/stdin
} 5>&1 2>&1)
split_sums "$sums"
[ "$TH_OK" = 2 ] || write_failed "${TH_NOTE:-the copy into $part failed}"
[ -n "$TH_DIGEST" ] || write_failed "${TH_NOTE:+$TH_NOTE: }cannot hash the received file"
keep_part "$part" "$dest" "$expected" "$TH_DIGEST"
