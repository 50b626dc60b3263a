# rtrain-needs: hashing cache
# seal_input.sh WORKDIR SHA256 SIZE RUN_DIR NAME: the partial copy of an input whose pieces all
# arrived is checked whole (by its pieces' digests, bound_pieces, or hashed); if it is SHA256
# and SIZE bytes it is placed in the run directory (`placed NAME ...`): with python3 it moves
# there and the cache gets a copy after the answer, else it moves into the cache and the run
# gets a copy; if not, it is dropped: `mismatch DIGEST`, exit 3.
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
# bound_pieces: every byte of the copy lies in a piece verified as it was written against a
# digest the daemon took in the same read as the whole file's SHA256 (put_range.sh writes it
# into the piece's marker), so together they are that file: no second hash of it here. An
# empty marker (an older rtrain's) binds nothing: the copy is then hashed whole.
bound_pieces() {
	bp_at=0
	while [ "$bp_at" -lt "$3" ]; do
		bp_next=
		for bp_marker in "$part.pieces/$bp_at"-*; do
			bp_length=${bp_marker##*-}
			if [ -s "$bp_marker" ] && is_uint "$bp_length" && [ "$bp_length" -gt 0 ]; then
				bp_next=$((bp_at + bp_length))
				break
			fi
		done
		[ -n "$bp_next" ] || return 1
		bp_at=$bp_next
	done
	[ "$bp_at" = "$3" ]
}
if [ "$(size_of "$part")" = "$3" ] && bound_pieces "$@"; then
	digest=$2
else
	digest=$(sha256_of "$part") || fail "$E_IO" unreadable partial
fi
if [ "$digest" != "$2" ] || [ "$(size_of "$part")" != "$3" ]; then
	rm -rf -- "$part" "$part.pieces"
	emit mismatch "$digest"
	exit "$E_MISMATCH"
fi
if have python3; then
	# The verified copy becomes the run's own file by a rename (no second copy written while
	# the start waits); the cache gets its own copy after the answer, hashed again
	# (cache_inputs.py fill), and a placement that finds it missing meanwhile waits for it.
	move_input "$part" "$run_dir" "$5"
	rm -rf -- "$part.pieces"
	printf '%s\t%s\n' "$2" "$5" | python3 -c "$CACHE_PROGRAM" fill "$CACHE_DIR" "$run_dir"
	exit 0
fi
chmod a-w -- "$part"
msg=$(mv -f -- "$part" "$CACHE_INPUTS/$2" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
printf '%s\n' "$2" | seal_entries
rm -rf -- "$part.pieces"
place_input "$CACHE_INPUTS/$2" "$run_dir" "$5"
exit 0
