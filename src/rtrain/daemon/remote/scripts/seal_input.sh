# rtrain-needs: hashing cache
# seal_input.sh WORKDIR SHA256 SIZE RUN_DIR NAME: the partial copy of an input whose pieces all
# arrived is hashed whole; if it is SHA256 and SIZE bytes it moves into the cache and is placed
# in the run directory (`placed NAME ...`); else it is dropped: `mismatch DIGEST`, exit 3.
need_args "$#" 5
# daemon/remote/cache_inputs.py (seal_entries): the daemon puts its text in place of the word.
CACHE_PROGRAM='@cache_inputs.py@'
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$(expand_workdir "$4") || fail "$E_USAGE" bad_dest
{ is_sha256 "$2" && is_uint "$3"; } || fail "$E_USAGE" usage
cache_dirs "$workdir"
part=$CACHE_PARTIAL/$2
# Another start sealed the same input meanwhile; placed once it proves to be its sha256.
if in_cache "$2" "$3" && [ "$(sha256_of "$CACHE_INPUTS/$2")" = "$2" ]; then
	rm -rf -- "$part" "$part.pieces"
	place_input "$CACHE_INPUTS/$2" "$run_dir" "$5"
	exit 0
fi
digest=$(sha256_of "$part") || fail "$E_IO" unreadable partial
if [ "$digest" != "$2" ] || [ "$(size_of "$part")" != "$3" ]; then
	rm -rf -- "$part" "$part.pieces"
	emit mismatch "$digest"
	exit "$E_MISMATCH"
fi
chmod a-w -- "$part"
msg=$(mv -f -- "$part" "$CACHE_INPUTS/$2" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
printf '%s\n' "$2" | seal_entries
rm -rf -- "$part.pieces"
place_input "$CACHE_INPUTS/$2" "$run_dir" "$5"
exit 0
