# rtrain-needs: run_dir hashing many_paths cache
# receive_tree.sh WORKDIR RUN_DIR RUN_ID: many small files of a start's inputs in one stream.
# Stdin: a line `COUNT`, then COUNT lines `SHA256<TAB>NAME` (NAME relative to the run dir),
# then a tar stream holding each content once, as `c/SHA256`, and each NAME as `t/NAME`, a
# hard link to its content. It is unpacked into a hidden folder of the run dir
# (`.rtrain-receiving-PID`); every content is hashed there (one hasher run), each name must
# be a link to its content (one stat run; else names are hashed too), and only when every
# one is its SHA256: the files move under their
# names in the run dir (the run's own copies), the contents into the work directory's input
# cache (read-only, so the next start places them instead of receiving them again), and
# `received COUNT`. Else nothing moves and the folder goes: `mismatch NAME` for each file
# whose bytes are not its SHA256, exit 3. No tar: `error no_tar`, exit 2, before any byte.
# With python3, one python3 does all of it as the stream comes (cache_inputs.py, `receive`),
# no tar needed: each content is written once, under its first name in a tree beside the
# run's, and hashed as it is written; when every one came as hashed, each gets a private
# copy in the cache and the tree moves into the run dir (a folder the run dir lacks by one
# rename). A cut or a mismatch moves what was verified into the cache instead (the next
# upload sends only the rest), and the run dir gets nothing, as above.
need_args "$#" 3
# daemon/remote/cache_inputs.py (seal_entries): the daemon puts its text in place of the word.
CACHE_PROGRAM='@cache_inputs.py@'
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
take_run_dir "$2" "$3"
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" no_run_dir
prove_run_dir "$3"
cache_dirs "$workdir"
stage=$RUN_DIR/.rtrain-receiving-$$
if have python3; then
	trap 'rm -rf -- "$stage"' EXIT
	msg=$(mkdir -- "$stage" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
	python3 -c "$CACHE_PROGRAM" receive "$CACHE_DIR" "$RUN_DIR" "$stage"
	exit "$?"
fi
have tar || fail "$E_USAGE" no_tar
IFS= read -r count || fail "$E_USAGE" usage
is_uint "$count" || fail "$E_USAGE" usage
trap 'rm -rf -- "$stage"' EXIT
msg=$(mkdir -- "$stage" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
entries='' contents='' i=0
while [ "$i" -lt "$count" ]; do
	IFS= read -r entry || fail "$E_USAGE" usage
	sha=${entry%%"$TAB"*}
	name=${entry#*"$TAB"}
	is_sha256 "$sha" || fail "$E_USAGE" usage
	case /$name/ in
	//* | */../* | */./* | *//*) fail "$E_OUTSIDE" path_outside_run "$(flat "$name")" ;;
	esac
	case $NL$contents in
	*"$NL$sha$NL"*) ;;
	*) contents=$contents$sha$NL ;;
	esac
	entries=$entries$entry$NL
	i=$((i + 1))
done
# -o: the files are the far user's, whatever the stream says (as root too).
if ! msg=$(tar -x -o -f - -C "$stage" 2>&1); then
	say "$msg"
	fail "$E_WRITE" write "$(flat "$msg")"
fi
contents=${contents%"$NL"}
staged=$(printf '%s\n' "$contents" | STAGE=$stage/c/ awk '{ print ENVIRON["STAGE"] $0 }')
got=$(hashes_of "$staged")
n=$(printf '%s\n' "$contents" | wc -l)
# The contents whose bytes hash to their names.
good=$(printf '%s\n%s\n' "$contents" "$got" | awk -v n="$n" '
	NR <= n { want[NR] = $0; next }
	$0 == want[NR - n] { print $0 }')
# Each name too (what the run gets): the very file of its content (one stat run over each
# list: a link to a hashed file holds its bytes), else one more hasher run, over the names.
names=$(printf '%s' "$entries" | STAGE=$stage/t/ awk -F "$TAB" '{ print ENVIRON["STAGE"] $2 }')
got_names=-
if content_ids=$(file_ids "$staged") && name_ids=$(file_ids "$names"); then
	got_names=$(printf '%s\n%s\n%s%s\n' "$contents" "$content_ids" "$entries" "$name_ids" |
		awk -v n="$n" -v m="$count" '
			NR <= n { sha[NR] = $0; next }
			NR <= 2 * n { of[$0] = sha[NR - n]; next }
			NR <= 2 * n + m { next }
			{ print (($0 in of) ? of[$0] : "-") }')
fi
case $NL$got_names$NL in
*"$NL-$NL"*) got_names=$(hashes_of "$names") ;;
esac
failed=$(printf '%s%s\n' "$entries" "$got_names" | awk -F "$TAB" -v n="$count" -v good="$good" '
	BEGIN { split(good, list, "\n"); for (i in list) ok[list[i]] = 1 }
	NR <= n { sha[NR] = $1; name[NR] = $2; next }
	{ i = NR - n; if (!(sha[i] in ok) || $0 != sha[i]) printf "mismatch\t%s\n", name[i] }')
if [ -n "$failed" ]; then
	printf '%s\n' "$failed"
	exit "$E_MISMATCH"
fi
# The run's own copies (a run may rewrite its files; the cache's must not change), then each
# under its name in one run of cp: hard links to the copies (GNU, busybox), else a move each.
msg=$(cp -R -- "$stage/t" "$stage/run" 2>&1) || fail "$E_WRITE" write "$(flat "$msg")"
if ! cp -al -- "$stage/run/." "$RUN_DIR/" 2>/dev/null; then
	set -f
	IFS=$NL
	for entry in $entries; do
		unset IFS
		name=${entry#*"$TAB"}
		# The daemon makes no far call for a folder that files land in: made here.
		case $name in
		*/*) mkdir -p -- "$RUN_DIR/${name%/*}" 2>/dev/null ;;
		esac
		msg=$(mv -f -- "$stage/run/$name" "$RUN_DIR/$name" 2>&1) ||
			fail "$E_WRITE" write "$(flat "$msg")"
		IFS=$NL
	done
	unset IFS
	set +f
fi
# Into the cache, read-only (one chmod and one mv for all where xargs takes many).
each_path "$staged" chmod a-w 2>/dev/null
# shellcheck disable=SC2016 # expanded by the inner sh
if each_path "$staged" sh -c 'mv -f -- "$@" "$0"' "$CACHE_INPUTS" 2>/dev/null; then
	# The names' links go first: dropping a link moves an entry's ctime, part of its identity.
	rm -rf -- "$stage"
	printf '%s\n' "$contents" | seal_entries
else
	say "the input cache was not filled; the next start sends these files again"
fi
emit received "$count"
exit 0
