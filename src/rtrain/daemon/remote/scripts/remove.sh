# rtrain-needs: run_dir processes nap stopping failure run_state
# remove.sh RUN_DIR RUN_ID [FORCE(0|1)]: remove a run that is not running or queued: its whole
# directory. A run dir that is already gone answers `removed -`.
# A process of no run whose working directory is in the run dir (one started there with
# exec.sh: a TensorBoard under nohup) would outlive the removal in a deleted directory: each
# is named (`dweller PID COMMAND`) and the removal refused (`busy`), unless FORCE is 1: then
# they get TERM, 5 s, then KILL, and the run dir goes once they are gone.
need_args "$#" 2
take_run_dir "$1" "$2"
force=${3:-0}
case $force in
0 | 1) ;;
*) fail "$E_USAGE" usage ;;
esac
if [ ! -e "$RUN_DIR" ] && [ ! -L "$RUN_DIR" ]; then
	emit removed -
	exit 0
fi
prove_run_dir "$2"
run_state "$RUN_DIR" "$2"
case $RS_STATE in
running | queued) fail "$E_REFUSED" "$RS_STATE" ;;
esac

nap_init
end_watcher "$2"

# The live processes whose working directory is the run dir or below it -> DWELLERS.
dwellers() {
	DWELLERS=
	have_proc || return 0
	dw_real=$(cd "$RUN_DIR" 2>/dev/null && pwd -P) || return 0
	set +f
	for dw_cwd in /proc/[0-9]*/cwd; do
		dw_pid=${dw_cwd#/proc/}
		dw_pid=${dw_pid%/cwd}
		dw_at=$(readlink "$dw_cwd" 2>/dev/null) || continue
		case $dw_at in
		"$dw_real" | "$dw_real"/*) ;;
		*) continue ;;
		esac
		is_kin "$dw_pid" && continue
		pid_alive "$dw_pid" || continue
		DWELLERS="$DWELLERS $dw_pid"
	done
}

dwellers
if [ -n "$DWELLERS" ] && [ "$force" = 0 ]; then
	for dw_pid in $DWELLERS; do
		dw_command=$({ tr '\0' ' ' <"/proc/$dw_pid/cmdline"; } 2>/dev/null | cut -c 1-200)
		emit dweller "$dw_pid" "$(flat "${dw_command:-?}")"
	done
	fail "$E_REFUSED" busy
fi
if [ -n "$DWELLERS" ]; then
	# shellcheck disable=SC2086 # a list of pids, split on purpose
	kill -s TERM $DWELLERS 2>/dev/null
	dw_left=$((5 * NAP_PER_SECOND))
	while dwellers && [ -n "$DWELLERS" ] && [ "$dw_left" -gt 0 ]; do
		nap
		dw_left=$((dw_left - 1))
	done
	if [ -n "$DWELLERS" ]; then
		# shellcheck disable=SC2086 # a list of pids, split on purpose
		kill -s KILL $DWELLERS 2>/dev/null
		dw_left=$((3 * NAP_PER_SECOND))
		while dwellers && [ -n "$DWELLERS" ] && [ "$dw_left" -gt 0 ]; do
			nap
			dw_left=$((dw_left - 1))
		done
	fi
	if [ -n "$DWELLERS" ]; then
		for dw_pid in $DWELLERS; do
			emit dweller "$dw_pid" -
		done
		fail "$E_SURVIVED" survived
	fi
fi
if ! msg=$(rm -rf -- "$RUN_DIR" 2>&1); then
	say "$msg"
	fail "$E_IO" rm "$(flat "$msg")"
fi
emit removed "$RUN_DIR"
exit 0
