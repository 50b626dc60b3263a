# cache_place.sh WORKDIR RUN_DIR [SHA256 SIZE NAME]...: each input already in the work
# directory's cache (same sha256 and size) is placed in the run directory as NAME (`placed
# NAME copied|linked`, see place_input: the run's own copy, or a large input shared
# read-only); each other one is `missing NAME`, followed by a `piece NAME OFFSET LENGTH` for
# each piece of it a cut upload left verified.
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$(expand_workdir "$2") || fail "$E_USAGE" bad_dest
[ -d "$run_dir" ] || fail "$E_NOT_FOUND" run_not_found
cache_dirs "$workdir"
shift 2
while [ "$#" -ge 3 ]; do
	{ is_sha256 "$1" && is_uint "$2"; } || fail "$E_USAGE" usage
	entry=$CACHE_INPUTS/$1
	if [ -f "$entry" ] && [ "$(size_of "$entry")" = "$2" ]; then
		place_input "$entry" "$run_dir" "$3" "$2"
	else
		emit missing "$3"
		for marker in "$CACHE_PARTIAL/$1.pieces"/*-*; do
			[ -e "$marker" ] || continue
			marker=${marker##*/}
			emit piece "$3" "${marker%-*}" "${marker#*-}"
		done
	fi
	shift 3
done
exit 0
