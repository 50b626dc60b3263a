# rtrain-needs: run_dir run_paths hashing many_paths
# list_files.sh RUN_DIR REL_PATH [HASHES]: `file<TAB>SIZE<TAB>SHA256<TAB>RELPATH` for each regular
# file at or below REL_PATH, `dir<TAB>RELPATH` for each empty directory. Nothing is printed
# before the whole tree has been checked, so an error never comes after a partial listing.
# HASHES `none` leaves SHA256 `-` and reads no file (a fetch hashes as send.sh sends); `sha256`,
# the default, hashes each file. The run's mark (`.rtrain-run`) is never listed.
need_args "$#" 2
case ${3-sha256} in
sha256 | none) hashes=${3-sha256} ;;
*) fail "$E_USAGE" usage ;;
esac
run_rel "$1" "$2"
# daemon/remote/tree_lister.py, which walks a directory where the host has python3 (one
# process, not a shell loop over every entry): the daemon puts its text in place of the word.
LISTER='@tree_lister.py@'
case $REL in
*"$TAB"* | *"$NL"*) fail "$E_BAD_NAME" bad_name "$(flat "$REL")" ;;
esac
target_in_run "$2"

emit_file() {
	ef_sha=-
	if [ "$hashes" = sha256 ]; then
		ef_sha=$(sha256_of "$1") || fail "$E_IO" unreadable "$2"
	fi
	ef_size=$(size_of "$1") || fail "$E_IO" unreadable "$2"
	emit file "$ef_size" "$ef_sha" "$2"
}

# walk MODE DIR RELDIR. MODE `check` only validates names and links; MODE `emit` prints
# `f<TAB>REL<TAB>PATH` for each file and `d<TAB>REL` for each empty directory, which `listed`
# then turns into the listing (sizes and hashes by the batch, not a tool run per file).
# Returns 0 when something below DIR was listed, 1 when nothing was; errors exit.
# Each subdirectory is walked in a subshell, which keeps this function's variables its own.
walk() {
	w_empty=1
	for w_entry in "$2"/* "$2"/.[!.]* "$2"/..?*; do
		[ -e "$w_entry" ] || [ -L "$w_entry" ] || continue
		w_name=${w_entry##*/}
		w_rel=${3:+$3/}$w_name
		# The run's mark is rtrain's, not the run's output: a fetch of the run leaves it.
		[ "$w_rel" = "$RUN_MARK" ] && continue
		case $w_name in
		*"$TAB"* | *"$NL"*) fail "$E_BAD_NAME" bad_name "$(flat "$w_rel")" ;;
		esac
		if [ -L "$w_entry" ]; then
			inside_run "$w_entry"
			[ "$?" = 1 ] && fail "$E_OUTSIDE" path_outside_run "$w_rel"
			# Links to directories are not followed: they could loop or list a tree twice.
			if [ -d "$w_entry" ]; then
				[ "$1" = check ] && say "not following the directory link $w_rel"
				continue
			fi
		fi
		if [ -d "$w_entry" ]; then
			(walk "$1" "$w_entry" "$w_rel")
			w_rc=$?
			case $w_rc in
			0) w_empty=0 ;;
			1)
				[ "$1" = emit ] && emit d "$w_rel"
				w_empty=0
				;;
			*) exit "$w_rc" ;;
			esac
		elif [ -f "$w_entry" ]; then
			[ "$1" = emit ] && emit f "$w_rel" "$w_entry"
			w_empty=0
		else
			[ "$1" = check ] && say "skipping $w_rel: not a regular file"
		fi
	done
	return "$w_empty"
}

# listed FOUND: the listing of what `walk emit` found, or one error line (exit 14) when some
# file could not be read.
listed() {
	ls_paths=$(printf '%s\n' "$1" | sed -n "s/^f${TAB}[^${TAB}]*${TAB}//p")
	ls_sizes=$(sizes_of "$ls_paths")
	ls_hashes=
	[ "$hashes" = sha256 ] && ls_hashes=$(hashes_of "$ls_paths")
	# Three lists, each ended by a lone tab, zipped by one awk; nothing is printed unless
	# every file was read.
	{
		printf '%s\n\t\n' "$1"
		[ -z "$ls_sizes" ] || printf '%s\n' "$ls_sizes"
		printf '\t\n'
		[ -z "$ls_hashes" ] || printf '%s\n' "$ls_hashes"
	} | LC_ALL=C awk -F "$TAB" '
		BEGIN { n = s = h = part = 0 }
		$0 == "\t" { part++; next }
		part == 0 { kind[n] = $1; rel[n] = $2; n++; next }
		part == 1 { size[s++] = $0; next }
		part == 2 { sha[h++] = $0 }
		END {
			f = 0
			for (i = 0; i < n; i++) if (kind[i] == "f") {
				if (size[f] !~ /^[0-9]+$/ || (h && sha[f] !~ /^[0-9a-f]+$/)) {
					printf "error\tunreadable\t%s\n", rel[i]
					exit 14
				}
				f++
			}
			f = 0
			for (i = 0; i < n; i++) {
				if (kind[i] == "f") {
					printf "file\t%s\t%s\t%s\n", size[f], (h ? sha[f] : "-"), rel[i]
					f++
				} else printf "dir\t%s\n", rel[i]
			}
		}'
}

if [ -f "$TARGET" ]; then
	emit_file "$TARGET" "$REL"
elif [ -d "$TARGET" ]; then
	if have python3; then
		exec python3 -c "$LISTER" "$TARGET" "$REL" "$REAL_RUN" "$hashes" "$RUN_MARK" \
			"$E_BAD_NAME" "$E_OUTSIDE"
	fi
	(walk check "$TARGET" "$REL")
	rc=$?
	[ "$rc" -le 1 ] || exit "$rc"
	found=$(walk emit "$TARGET" "$REL")
	rc=$?
	if [ "$rc" -gt 1 ]; then
		printf '%s\n' "$found"
		exit "$rc"
	fi
	[ "$rc" = 1 ] && found="d$TAB${REL:-.}"
	listed "$found" || exit "$?"
else
	fail "$E_NOT_FOUND" not_a_file "$(flat "$2")"
fi
exit 0
