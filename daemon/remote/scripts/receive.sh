# receive.sh DEST_ABS_PATH EXPECTED_SHA256: stdin -> DEST, kept only if its sha256 matches.
need_args "$#" 2
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
expected=$(printf '%s' "$2" | tr 'A-F' 'a-f')
part=$dest.part

if [ -d "$dest" ]; then
	say "$dest is a directory"
	fail "$E_WRITE" write "destination is a directory"
fi
# cat reports a full disk or a missing directory on stderr; keep its words for the daemon.
if ! msg=$({ cat >"$part"; } 2>&1); then
	rm -f -- "$part"
	say "$msg"
	fail "$E_WRITE" write "$(flat "$msg")"
fi
keep_part "$part" "$dest" "$expected"
