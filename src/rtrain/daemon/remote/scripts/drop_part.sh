# drop_part.sh DEST -> DEST.part removed (an upload that failed leaves nothing behind).
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
rm -f -- "$dest.part"
