# rtrain-needs: hashing
# put_chunk.sh DEST OFFSET SHA256|-, the chunk on stdin (already verified by the agent). OFFSET 0
# starts the part file afresh; others are written in place. With SHA256 the part is checked
# and renamed into place (answer `ok`, `mismatch` or `error`, as receive.sh), else the answer
# is `written<TAB>OFFSET`.
need_args "$#" 3
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
offset=$2
expected=$(printf '%s' "$3" | tr 'A-F' 'a-f')
part=$dest.part
is_uint "$offset" || fail "$E_USAGE" usage
[ "$((offset % 65536))" = 0 ] || fail "$E_USAGE" usage
if [ -d "$dest" ]; then
	say "$dest is a directory"
	fail "$E_WRITE" write "destination is a directory"
fi
if [ "$offset" = 0 ]; then
	msg=$({ cat >"$part"; } 2>&1)
elif [ -f "$part" ]; then
	msg=$(dd of="$part" bs=65536 seek="$((offset / 65536))" conv=notrunc 2>&1)
else
	fail "$E_WRITE" write "the partial file $part is gone"
fi
# shellcheck disable=SC2181 # the status of the assignment above is the copy's
if [ "$?" != 0 ]; then
	rm -f -- "$part"
	say "$msg"
	fail "$E_WRITE" write "$(flat "$msg")"
fi
if [ "$expected" = - ]; then
	emit written "$offset"
	exit 0
fi
keep_part "$part" "$dest" "$expected"
