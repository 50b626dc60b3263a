# rtrain-needs: run_dir processes run_meta failure own_files
# The state of a run from its files and its processes (status.sh, watch.sh and others).
PF_PID=

# train.pid -> PF_PID (digits only, else empty); OWN as own_dir sets it.
read_pid_file() {
	PF_PID=
	own_dir "$1"
	[ -f "$OWN/train.pid" ] || return 0
	pf_line=
	{ IFS= read -r pf_line <"$OWN/train.pid"; } 2>/dev/null
	case $pf_line in
	'' | *[!0-9]*) return 0 ;;
	esac
	[ "${#pf_line}" -le 9 ] && PF_PID=$pf_line
}

# The `status` file -> RS_STATE RS_EXIT RS_SIGNAL (RS_DETAIL); 1 when there is none yet.
state_from_status_file() {
	own_dir "$1"
	[ -f "$OWN/status" ] || return 1
	sf_code=
	{ IFS= read -r sf_code <"$OWN/status"; } 2>/dev/null
	if ! is_uint "$sf_code" || [ "${#sf_code}" -gt 3 ] || [ "$sf_code" -gt 255 ]; then
		RS_STATE=failed RS_EXIT=- RS_SIGNAL=- RS_DETAIL='unreadable status file'
	else
		sf_code=$((sf_code + 0))
		RS_EXIT=$sf_code
		if [ "$sf_code" -gt 128 ]; then
			RS_SIGNAL=$((sf_code - 128))
		fi
		if [ "$sf_code" -eq 0 ]; then
			RS_STATE=completed
		else
			RS_STATE=failed
			# launch.sh's first steps leave these when the trainer never got to run.
			if [ -f "$BOOK/env_failed" ]; then
				# rtrain-env (env_build.py): the environment's build failed, on this line.
				sf_env=
				{ IFS= read -r sf_env <"$BOOK/env_failed"; } 2>/dev/null
				set_detail "environment: ${sf_env:-the build failed}"
			elif [ -e "$BOOK/setup_failed" ]; then
				RS_DETAIL=setup
			elif [ -e "$BOOK/program_missing" ]; then
				RS_DETAIL='program not found'
			else
				failure_reason "$1" "$sf_code"
			fi
		fi
	fi
	if [ -e "$BOOK/stop_requested" ]; then
		# After a refused stop the wrapper may be gone while a child that ignored the signal
		# lives on: the run is not stopped until nothing of it is left.
		if [ -n "$(marked_pids "${1##*/}")" ]; then
			RS_STATE=running
			RS_DETAIL='stop requested, but processes of the run are still alive'
		else
			RS_STATE=stopped
			RS_DETAIL='stopped on request'
			limit_detail "$1"
		fi
	fi
	return 0
}

# A stop that the run's limits made (limits.sh): RS_DETAIL becomes `limit: WHY SECONDS`
# (`max_duration 21600`, `stalled 1800`), as limit_stop says.
limit_detail() {
	own_dir "$1"
	[ -f "$BOOK/limit_stop" ] || return 0
	ld_line=
	{ IFS= read -r ld_line <"$BOOK/limit_stop"; } 2>/dev/null
	case $ld_line in
	'max_duration '[0-9]* | 'stalled '[0-9]*) RS_DETAIL="limit: $ld_line" ;;
	esac
}

# A running run that limits.sh found still (`stalled`: the epoch second it went still) ->
# RS_STALLED, the seconds since then.
stalled_for() {
	own_dir "$1"
	[ -f "$BOOK/stalled" ] || return 0
	sf_since=
	{ IFS= read -r sf_since <"$BOOK/stalled"; } 2>/dev/null
	is_uint "$sf_since" && [ "${#sf_since}" -le 12 ] || return 0
	sf_now=$(date +%s)
	RS_STALLED=$((sf_now - sf_since))
	[ "$RS_STALLED" -lt 0 ] && RS_STALLED=0
	return 0
}

# True while the run has a live process: its session leader (pid file, verified by marker and
# boot id) or, failing that, any process carrying its marker.
run_alive() {
	RS_REBOOTED=
	if rebooted_since_start; then
		RS_REBOOTED=1
		return 1
	fi
	read_pid_file "$1"
	if [ -n "$PF_PID" ] && [ "$PF_PID" -gt 1 ] && pid_alive "$PF_PID"; then
		# Without /proc the marker cannot be read; kill -0 is the best there is.
		have_proc || return 0
		has_marker "$PF_PID" "$2" && return 0
	fi
	ra_pids=$(marked_pids "$2")
	if [ -n "$ra_pids" ]; then
		RS_DETAIL='session leader gone; processes of the run still alive'
		return 0
	fi
	return 1
}

# The state of one run -> RS_STATE RS_EXIT RS_SIGNAL RS_STARTED RS_DETAIL RS_STALLED
# RS_FAILED_AT RS_RANK0 ("-" when empty; RS_STALLED: seconds a running run has been still,
# see limits.sh; RS_FAILED_AT: when its first failing rank failed, epoch seconds, see
# rank_failure_reason; RS_RANK0: 1 when global rank 0 of a torchrun run ran here).
run_state() {
	RS_STATE=missing RS_EXIT=- RS_SIGNAL=- RS_STARTED=- RS_DETAIL=- RS_STALLED=- RS_FAILED_AT=- RS_RANK0=-
	if [ ! -d "$1" ]; then
		RS_DETAIL='no run directory'
		return 0
	fi
	if ! is_run_dir "$1" "$2"; then
		# A plain directory, or a link, where the run would be: no run of rtrain's.
		RS_DETAIL='not a run of rtrain'
		return 0
	fi
	read_meta "$1"
	[ -n "$META_STARTED" ] && RS_STARTED=$META_STARTED
	# rtrain-ranks found global rank 0 among this node's workers (rank_lines.py).
	[ -f "$1/.rtrain/rank0" ] && RS_RANK0=1
	state_from_status_file "$1" && return 0
	if run_alive "$1" "$2"; then
		RS_STATE=running
		# gpus.sh's gate waits for GPUs on the host; `queued` says for what.
		own_dir "$1"
		if [ -f "$BOOK/queued" ]; then
			RS_STATE=queued
			{ IFS= read -r RS_DETAIL <"$BOOK/queued"; } 2>/dev/null
			RS_DETAIL=$(flat "${RS_DETAIL:-waiting for GPUs}")
		else
			stalled_for "$1"
		fi
		return 0
	fi
	# The wrapper may have written its status between the two looks.
	state_from_status_file "$1" && return 0
	own_dir "$1"
	if [ -e "$BOOK/stop_requested" ]; then
		RS_STATE=stopped
		RS_DETAIL='stopped on request; no exit status'
		limit_detail "$1"
	else
		RS_STATE=lost
		if [ -n "$RS_REBOOTED" ]; then
			RS_DETAIL='host rebooted since the run started'
		elif [ ! -f "$OWN/train.pid" ] && [ ! -f "$BOOK/meta.json" ]; then
			RS_DETAIL='never launched'
		else
			RS_DETAIL='process gone without exit status'
		fi
	fi
}
