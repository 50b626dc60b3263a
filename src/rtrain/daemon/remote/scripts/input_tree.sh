# rtrain-needs: run_dir run_paths
# input_tree.sh RUN_DIR RUN_ID: shape the run dir for a start's inputs. Stdin holds one line
# per step, `d<TAB>REL` (make directory REL), `x<TAB>REL` (make file REL executable by its
# owner) or `l<TAB>REL<TAB>TARGET` (make REL a symbolic link to TARGET, never followed here);
# REL is relative, '/'-separated, and may not leave the run dir.
need_args "$#" 2
take_run_dir "$1" "$2"
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" no_run_dir
prove_run_dir "$2"
REAL_RUN=$(real_path "$RUN_DIR") || fail "$E_NOT_FOUND" no_run_dir
while IFS= read -r tree_line || [ -n "$tree_line" ]; do
	[ -n "$tree_line" ] || continue
	tree_op=${tree_line%%"$TAB"*}
	tree_rel=${tree_line#*"$TAB"}
	if [ "$tree_op" = l ]; then
		tree_target=${tree_rel#*"$TAB"}
		tree_rel=${tree_rel%%"$TAB"*}
	fi
	case /$tree_rel/ in
	//* | */../* | */./* | *//*) fail "$E_OUTSIDE" path_outside_run "$(flat "$tree_rel")" ;;
	esac
	case $tree_op in
	d)
		if ! msg=$(mkdir -p -- "$RUN_DIR/$tree_rel" 2>&1); then
			say "$msg"
			fail "$E_IO" mkdir "$(flat "$msg")"
		fi
		;;
	x)
		if ! msg=$(chmod u+x -- "$RUN_DIR/$tree_rel" 2>&1); then
			say "$msg"
			fail "$E_IO" chmod "$(flat "$msg")"
		fi
		;;
	l)
		# The link's folder must be the run's own, not reached through another link.
		tree_parent=$RUN_DIR
		case $tree_rel in
		*/*) tree_parent=$RUN_DIR/${tree_rel%/*} ;;
		esac
		{ [ -d "$tree_parent" ] && [ ! -L "$tree_parent" ] && inside_run "$tree_parent"; } ||
			fail "$E_OUTSIDE" path_outside_run "$(flat "$tree_rel")"
		if ! msg=$(ln -s -- "$tree_target" "$RUN_DIR/$tree_rel" 2>&1); then
			say "$msg"
			fail "$E_IO" link "$(flat "$msg")"
		fi
		;;
	*) fail "$E_USAGE" usage "$(flat "$tree_op")" ;;
	esac
done
emit ok
exit 0
