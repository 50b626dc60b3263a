# rtrain-needs: hashing
# The work directory's input cache.

# The input cache of a work directory (docs/architecture.md, "Transfers"): whole inputs by
# sha256 under inputs/, uploads on their way under partial/ (SHA, and SHA.pieces/OFF-LEN for
# each piece already verified).
cache_dirs() {
	CACHE_DIR=$1/.cache
	CACHE_INPUTS=$CACHE_DIR/inputs
	CACHE_PARTIAL=$CACHE_DIR/partial
	cd_msg=$(mkdir -p -- "$CACHE_INPUTS" "$CACHE_PARTIAL" 2>&1) || fail "$E_IO" cache "$(flat "$cd_msg")"
}

# place_input ENTRY RUN_DIR NAME: the cached ENTRY appears as RUN_DIR/NAME, the run's own to
# rewrite, append to or delete without changing the cache or another run: a reflink where the
# filesystem makes one (no bytes copied), else a private copy. Never a hard link: a run could
# make its link writable (it owns the file) and change the cache. `placed NAME copied`.
place_input() {
	case /$3/ in
	*/../* | */./* | //*) fail "$E_OUTSIDE" path_outside_run "$(flat "$3")" ;;
	esac
	pi_dest=$2/$3
	case $3 in
	*/*) mkdir -p -- "${pi_dest%/*}" 2>/dev/null ;;
	esac
	pi_tmp=${pi_dest%/*}/.${3##*/}.placing-$$
	# Tried once a script: a filesystem that cannot reflink one input cannot reflink the next.
	if [ "${PI_REFLINK-}" != no ] && cp --reflink=always -- "$1" "$pi_tmp" 2>/dev/null &&
		chmod u+w -- "$pi_tmp" 2>/dev/null; then
		:
	else
		[ "${PI_REFLINK-}" = no ] || rm -f -- "$pi_tmp"
		PI_REFLINK=no
		# cp copies inside the kernel where it can (copy_file_range): a large input is not
		# carried through a pipe and back, as cat would.
		if cp -- "$1" "$pi_tmp" 2>/dev/null && chmod u+w -- "$pi_tmp" 2>/dev/null; then
			:
		elif rm -f -- "$pi_tmp"; ! cat -- "$1" >"$pi_tmp" 2>/dev/null; then
			# A new file, so it is writable (and private: umask 077).
			pi_msg=$(cat -- "$1" 2>&1 >"$pi_tmp")
			rm -f -- "$pi_tmp"
			fail "$E_WRITE" write "$(flat "${pi_msg:-copying $3 failed}")"
		fi
	fi
	pi_msg=$(mv -f -- "$pi_tmp" "$pi_dest" 2>&1) || {
		rm -f -- "$pi_tmp"
		fail "$E_WRITE" write "$(flat "$pi_msg")"
	}
	emit placed "$3" copied
}

# move_input FILE RUN_DIR NAME: FILE (verified, the caller's own) moves to RUN_DIR/NAME, the
# run's own to rewrite. `placed NAME copied`, as place_input says it.
move_input() {
	case /$3/ in
	*/../* | */./* | //*) fail "$E_OUTSIDE" path_outside_run "$(flat "$3")" ;;
	esac
	mi_dest=$2/$3
	case $3 in
	*/*) mkdir -p -- "${mi_dest%/*}" 2>/dev/null ;;
	esac
	chmod u+w -- "$1" 2>/dev/null
	mi_msg=$(mv -f -- "$1" "$mi_dest" 2>&1) || fail "$E_WRITE" write "$(flat "$mi_msg")"
	emit placed "$3" copied
}

# seal_entries: stdin names (a sha256 a line) entries just verified and moved into the cache,
# read-only; their identity is written down (cache_inputs.py, whose text the calling script
# holds in CACHE_PROGRAM), so that the next start places them without hashing them again.
seal_entries() {
	if have python3; then
		python3 -c "$CACHE_PROGRAM" seal "$CACHE_DIR" 2>/dev/null || :
	else
		cat >/dev/null
	fi
}

# in_cache SHA256 SIZE: the input is in the work directory's cache already. Starts that ship
# the same input side by side race to seal it; the first one's copy was verified like the
# others' would be, so the others place it instead of failing on a partial that moved.
in_cache() {
	[ -f "$CACHE_INPUTS/$1" ] && [ "$(size_of "$CACHE_INPUTS/$1")" = "$2" ]
}

# place_listed RUN_DIR: cache_place.sh's work (its header says what), for the list on stdin;
# the calling script holds cache_inputs.py's text in CACHE_PROGRAM and has run cache_dirs.
# It ends the script.
place_listed() {
	if have python3; then
		exec python3 -c "$CACHE_PROGRAM" place "$CACHE_DIR" "$1"
	fi
	while IFS= read -r line || [ -n "$line" ]; do
		[ -n "$line" ] || continue
		sha=${line%%"$TAB"*}
		rest=${line#*"$TAB"}
		size=${rest%%"$TAB"*}
		name=${rest#*"$TAB"}
		{ [ "$rest" != "$line" ] && [ "$name" != "$rest" ] && is_sha256 "$sha" && is_uint "$size"; } ||
			fail "$E_USAGE" usage
		entry=$CACHE_INPUTS/$sha
		if in_cache "$sha" "$size" && [ "$(sha256_of "$entry")" = "$sha" ]; then
			place_input "$entry" "$1" "$name"
		else
			# Not its sha256 any more: changed in place, never to be placed again.
			[ ! -f "$entry" ] || rm -f -- "$entry"
			emit missing "$name"
			for marker in "$CACHE_PARTIAL/$sha.pieces"/*-*; do
				[ -e "$marker" ] || continue
				marker=${marker##*/}
				emit piece "$name" "${marker%-*}" "${marker#*-}"
			done
		fi
	done
	exit 0
}
