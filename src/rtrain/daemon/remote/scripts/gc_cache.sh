# rtrain-needs: cache
# gc_cache.sh WORKDIR: removes the cache entries no run directory uses (no hard link to them
# left, and no run's meta.json naming its sha256: runs hold their own copies of most inputs)
# and partial uploads untouched for an hour; `freed BYTES ENTRIES PARTIALS`.
need_args "$#" 1
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
freed=0 entries=0 partials=0
if [ -d "$workdir/.cache" ]; then
	cache_dirs "$workdir"
	# Every sha256 a run directory's meta.json names (its inputs, rtrain's own files).
	used=$NL$(cat "$workdir"/*/meta.json 2>/dev/null | grep -o '[0-9a-f]\{64\}' | sort -u)$NL
	for entry in "$CACHE_INPUTS"/*; do
		[ -f "$entry" ] || continue
		case $used in
		*"$NL${entry##*/}$NL"*) continue ;;
		esac
		# shellcheck disable=SC2012 # the link count: POSIX has no stat(1), and the name is a sha256
		links=$(ls -ld -- "$entry" | awk '{print $2}')
		[ "$links" = 1 ] || continue
		bytes=$(size_of "$entry") || continue
		rm -f -- "$entry" && freed=$((freed + bytes)) && entries=$((entries + 1))
	done
	# An upload in progress touches its partial copy at least once a piece.
	# One name a line, read whole: the workdir may hold spaces.
	stale=$(find "$CACHE_PARTIAL" -maxdepth 1 -type f -mmin +60 2>/dev/null)
	while IFS= read -r part; do
		[ -n "$part" ] || continue
		bytes=$(size_of "$part") || bytes=0
		rm -rf -- "$part" "$part.pieces" && freed=$((freed + bytes)) && partials=$((partials + 1))
	done <<EOF
$stale
EOF
fi
emit freed "$freed" "$entries" "$partials"
exit 0
