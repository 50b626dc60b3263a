# rtrain-needs: hashing cache
# put_range.sh WORKDIR SHA256 SIZE OFFSET LENGTH PIECE_SHA256 [RUN_DIR NAME]: LENGTH bytes on
# stdin are written at OFFSET (a multiple of 1 MiB) of the cache's partial copy of input
# SHA256, hashed as they are written; kept (`piece OFFSET LENGTH`, and a marker holding
# PIECE_SHA256 that a resumed upload and the seal find) only if they hash to PIECE_SHA256, else `mismatch`, exit 3. A piece
# that is the whole input (RUN_DIR and NAME given) is sealed at once: into the cache, placed
# in the run directory (`placed ...`).
# put_range.sh WORKDIR SHA256 SIZE OFFSET LENGTH PIECE_SHA256 OFFSET LENGTH PIECE_SHA256...:
# consecutive pieces back to back on stdin, each kept as above as soon as it verifies (one
# channel and one far process for several pieces); needs python3, else `one_piece`, exit 2,
# before any byte is read.
need_args "$#" 6
# daemon/remote/cache_inputs.py (seal_entries): the daemon puts its text in place of the word.
CACHE_PROGRAM='@cache_inputs.py@'
RANGE_PROGRAM='@range_mover.py@'
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
sha=$2 size=$3 offset=$4 length=$5 expected=$6
{ is_sha256 "$sha" && is_sha256 "$expected"; } || fail "$E_USAGE" usage
{ is_uint "$size" && is_uint "$offset" && is_uint "$length"; } || fail "$E_USAGE" usage
[ "$((offset % 1048576))" = 0 ] || fail "$E_USAGE" usage
cache_dirs "$workdir"
if [ "$#" -gt 8 ]; then
	have python3 || fail "$E_USAGE" one_piece
	shift 3
	at=$1
	for piece_arg in "$@"; do
		case $piece_arg in
		*[!0-9]*) is_sha256 "$piece_arg" || fail "$E_USAGE" usage ;;
		esac
	done
	[ "$(($# % 3))" = 0 ] || fail "$E_USAGE" usage
	set -- "$@" end
	while [ "$1" != end ]; do
		{ [ "$1" = "$at" ] && is_uint "$2" && [ "$(($1 % 1048576))" = 0 ] && is_sha256 "$3"; } ||
			fail "$E_USAGE" usage
		at=$(($1 + $2))
		set -- "$@" "$1" "$2" "$3"
		shift 3
	done
	shift
	[ "$at" -le "$size" ] || fail "$E_USAGE" usage
	pieces=$CACHE_PARTIAL/$sha.pieces
	msg=$(mkdir -p -- "$pieces" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
	# One process reads, hashes, writes and marks each piece (range_mover.py).
	said=$(python3 -c "$RANGE_PROGRAM" puts "$CACHE_PARTIAL/$sha" "$pieces" "$@" 2>/dev/null)
	code=$?
	set -f
	IFS=$NL
	for line in $said; do
		case $line in
		piece"$TAB"* | mismatch"$TAB"*) printf '%s\n' "$line" ;;
		*) note=$line ;;
		esac
	done
	unset IFS
	set +f
	[ "$code" = 0 ] && exit 0
	[ "$code" = 3 ] && exit "$E_MISMATCH"
	say "${note:-writing $CACHE_PARTIAL/$sha failed}"
	fail "$E_WRITE" write "$(flat "${note:-writing the partial copy failed}")"
fi
whole=0
[ "$#" -ge 8 ] && [ "$offset" = 0 ] && [ "$length" = "$size" ] && whole=1
part=$CACHE_PARTIAL/$sha
pieces=$part.pieces
if [ "$whole" = 1 ]; then
	# One piece has nothing to resume from: a copy of its own, so that starts shipping the
	# same input side by side never write into, or seal, one another's file.
	part=$CACHE_PARTIAL/$sha.whole-$$
	msg=$({ : >"$part"; } 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
else
	msg=$(mkdir -p -- "$pieces" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
	# Its bytes are about to be written again: no marker vouches for them until they verify.
	rm -f -- "$pieces/$offset-$length"
fi
# Pieces of one input arrive side by side, in any order: each is written in place.
if have python3; then
	# One process reads, hashes and writes each byte (range_mover.py).
	if sums=$(python3 -c "$RANGE_PROGRAM" put "$part" "$offset" "$length" 2>/dev/null) &&
		is_digest "$sums"; then
		TH_DIGEST=$sums TH_OK=2 TH_NOTE=
	else
		TH_DIGEST='' TH_OK=0 TH_NOTE=$sums
	fi
else
	{ have tee && fd_by_name; } || fail "$E_USAGE" no_tee
	sums=$({
		{
			{ tee /dev/fd/4 2>&5; printf 'tee %s\n' "$?" >&5; } |
				{ dd of="$part" bs=1048576 seek="$((offset / 1048576))" conv=notrunc 2>&5; printf 'cat %s\n' "$?" >&5; }
		} 4>&1 | sha256_of /dev/stdin
	} 5>&1 2>&1)
	split_sums "$sums"
fi
if [ "$whole" = 1 ] && [ "$TH_DIGEST" = "$expected" ] && [ "$expected" = "$sha" ] &&
	in_cache "$sha" "$size"; then
	# Another start sealed the same input meanwhile: the run gets these verified bytes.
	run_dir=$(expand_workdir "$7") || fail "$E_USAGE" bad_dest
	emit piece "$offset" "$length"
	place_input "$part" "$run_dir" "$8"
	rm -f -- "$part"
	exit 0
fi
if [ "$TH_OK" != 2 ] || [ -z "$TH_DIGEST" ]; then
	[ "$whole" = 1 ] && rm -f -- "$part"
	say "${TH_NOTE:-writing $part failed}"
	fail "$E_WRITE" write "$(flat "${TH_NOTE:-writing the partial copy failed}")"
fi
if [ "$TH_DIGEST" != "$expected" ]; then
	[ "$whole" = 1 ] && rm -f -- "$part"
	emit mismatch "$TH_DIGEST"
	exit "$E_MISMATCH"
fi
# The marker holds the piece's sha256: the daemon took it in the same read as the whole
# file's, so a copy whose every piece has one needs no second hash at the seal.
[ "$whole" = 1 ] || printf '%s\n' "$expected" >"$pieces/$offset-$length"
emit piece "$offset" "$length"
if [ "$whole" = 1 ]; then
	[ "$expected" = "$sha" ] || {
		rm -f -- "$part"
		fail "$E_MISMATCH" mismatch "$expected"
	}
	run_dir=$(expand_workdir "$7") || fail "$E_USAGE" bad_dest
	if [ "$(size_of "$part")" != "$size" ]; then
		rm -rf -- "$part" "$pieces"
		fail "$E_MISMATCH" mismatch "$expected"
	fi
	chmod a-w -- "$part"
	msg=$(mv -f -- "$part" "$CACHE_INPUTS/$sha" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
	printf '%s\n' "$sha" | seal_entries
	rm -rf -- "$pieces"
	place_input "$CACHE_INPUTS/$sha" "$run_dir" "$8"
fi
exit 0
