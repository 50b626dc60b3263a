# rtrain-needs: run_dir many_paths
# send_tree.sh RUN_DIR: the run's files named on stdin (one path relative to the run directory
# per line, as list_files.sh listed them) one after another on stdout, in that order, with no
# framing of their own: the daemon cuts the stream by the sizes it listed. After the bytes, on
# stderr, one line per file and kind, in the order asked:
#   state<TAB>STATE    the file's file_state before it was read (`-`: it could not be read)
#   sha256<TAB>DIGEST  its sha256, hashed after it was sent (`-`: it could not be hashed)
#   after<TAB>STATE    its file_state after it was hashed
#   sent<TAB>COUNT     last: the script got to the end
# A file is the bytes sent when its two states are the same, its size is its share's and the
# sha256 of its share is DIGEST; any other (changed, grown, gone) the daemon fetches on its own.
# A path that leaves the run directory (a link, `..`) or is not a regular file is refused
# before any byte: `error<TAB>KIND<TAB>PATH` on stderr, exit 7 or 8. Each tool runs once for
# the whole batch (xargs), not once per file. With python3, one python3 does it all
# (tree_sender.py): each file read once, hashed as it is sent, its state (device, inode,
# size, mtime in ns) taken just before and just after.
need_args "$#" 1
refuse() {
	rf_code=$1
	shift
	emit error "$@" >&2
	exit "$rf_code"
}
take_run_dir "$1"
[ -d "$RUN_DIR" ] || refuse "$E_NOT_FOUND" run_not_found
prove_run_dir "${RUN_DIR##*/}"
REAL_RUN=$(real_path "$RUN_DIR") || refuse "$E_NOT_FOUND" run_not_found
# daemon/remote/tree_sender.py: the daemon puts its text in place of the word below.
SENDER='@tree_sender.py@'
if have python3; then
	exec python3 -c "$SENDER" "$RUN_DIR" "$REAL_RUN" "$E_OUTSIDE" "$E_NOT_FOUND"
fi
paths=
while IFS= read -r tree_rel || [ -n "$tree_rel" ]; do
	[ -n "$tree_rel" ] || continue
	case /$tree_rel/ in
	//* | */../* | */./* | *//*) refuse "$E_OUTSIDE" path_outside_run "$(flat "$tree_rel")" ;;
	esac
	[ -f "$RUN_DIR/$tree_rel" ] || refuse "$E_NOT_FOUND" not_a_file "$(flat "$tree_rel")"
	paths=$paths$RUN_DIR/$tree_rel$NL
done
paths=${paths%"$NL"}
[ -n "$paths" ] || {
	emit sent 0 >&2
	exit 0
}
# Every file's real path, in one run of readlink where it takes many (else one per file):
# each must be inside the run, so neither a link nor a linked folder leads out of it. The
# real paths are what is read, so a link swapped after this look cannot lead out either.
if ! reals=$(each_path "$paths" readlink -f -- 2>/dev/null) ||
	[ "$(printf '%s\n' "$reals" | wc -l)" != "$(printf '%s\n' "$paths" | wc -l)" ]; then
	reals=$(per_path "$paths" real_path)
fi
set -f
IFS=$NL
for tree_real in $reals; do
	case $tree_real in
	"$REAL_RUN"/*) ;;
	*)
		unset IFS
		refuse "$E_OUTSIDE" path_outside_run "$(flat "${tree_real#"$REAL_RUN"/}")"
		;;
	esac
done
unset IFS
set +f
before=$(states_of "$reals")
# cat goes on past a file it cannot read; the stream is then short, which the hashes tell.
# shellcheck disable=SC2317 # called through per_path
cat_one() {
	cat -- "$1" 2>/dev/null || true
}
if printf 'x\0' | xargs -0 true 2>/dev/null; then
	each_path "$reals" cat 2>/dev/null
else
	per_path "$reals" cat_one
fi
digests=$(hashes_of "$reals")
after=$(states_of "$reals")
{
	printf '%s\n' "$before" | sed "s/^/state$TAB/"
	printf '%s\n' "$digests" | sed "s/^/sha256$TAB/"
	printf '%s\n' "$after" | sed "s/^/after$TAB/"
} >&2
emit sent "$(printf '%s\n' "$reals" | wc -l | tr -d ' ')" >&2
exit 0
