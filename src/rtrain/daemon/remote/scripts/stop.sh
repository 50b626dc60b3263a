# rtrain-needs: run_dir processes nap stopping run_meta failure run_state own_files
# stop.sh RUN_DIR RUN_ID GRACE_SECONDS FORCE(0|1): stop every process of the run and report
# `stopped` only once none is left; then the run's state as status.sh words it (`run` line),
# so the daemon needs no second command to know how the run stands now.
need_args "$#" 4
take_run_dir "$1" "$2"
prove_run_dir "$2"
run_id=$2
grace=$3
force=$4
case $grace in
'' | . | *[!0-9.]* | *.*.*) fail "$E_USAGE" usage ;;
esac
case $force in
0 | 1) ;;
*) fail "$E_USAGE" usage ;;
esac
grace_whole=${grace%%.*}
grace_tenths=0
case $grace in
*.?*)
	grace_tenths=${grace#*.}
	grace_tenths=${grace_tenths%"${grace_tenths#?}"}
	;;
esac
[ "${#grace_whole}" -le 6 ] || fail "$E_USAGE" usage
# A leading zero would make the shell read octal.
grace_whole=${grace_whole#"${grace_whole%%[!0]*}"}
grace_tenths=$((${grace_whole:-0} * 10 + grace_tenths))

refuse() {
	say "refusing to stop run $run_id: $1"
	emit outcome refused
	emit reason "$1"
	exit "$E_REFUSED"
}

nap_init
if [ "$NAP_PER_SECOND" = 10 ]; then
	grace_naps=$grace_tenths
else
	grace_naps=$(((grace_tenths + 9) / 10))
fi

own_sid=
own_pgrp=
if have_proc && proc_stat "$$"; then
	own_sid=$ST_SID
	own_pgrp=$ST_PGRP
fi

# The session the run's leader created: trusted only when the leader carries the marker, or
# when a marked process still belongs to it after the leader ended.
session=
session_candidate=
read_meta "$RUN_DIR"
read_pid_file "$RUN_DIR"
if [ -n "$PF_PID" ]; then
	[ "$PF_PID" -le 1 ] && refuse "the pid file names pid $PF_PID"
	# After a reboot the pid file names some other process: ignore it.
	if ! rebooted_since_start; then
		is_kin "$PF_PID" && refuse "the pid file names this stop command or one of its parents"
		if [ "$PF_PID" = "$own_sid" ] || [ "$PF_PID" = "$own_pgrp" ]; then
			refuse "the pid file names the session or group of this stop command"
		fi
		session_candidate=$PF_PID
		if pid_alive "$PF_PID"; then
			if ! have_proc; then
				session=$PF_PID
			elif has_marker "$PF_PID" "$run_id"; then
				proc_stat "$PF_PID"
				if [ "$ST_SID" = "$own_sid" ] || [ "$ST_PGRP" = "$own_pgrp" ]; then
					refuse "the run's leader shares this stop command's session or group"
				fi
				session=$PF_PID
			elif [ -f "$OWN/status" ]; then
				# The run ended and recorded its status; its pid has been reused since.
				session_candidate=
			else
				refuse "the pid file names live pid $PF_PID, which is not part of this run"
			fi
		fi
	fi
fi

# The run's live processes -> LIVE (" pid pid ... ").
collect() {
	c_found=$(marked_pids "$run_id")
	if [ -z "$session" ] && [ -n "$session_candidate" ]; then
		for c_pid in $c_found; do
			if proc_stat "$c_pid" && [ "$ST_SID" = "$session_candidate" ]; then
				session=$session_candidate
				break
			fi
		done
	fi
	if [ -n "$session" ]; then
		if have_proc; then
			c_found="$c_found$NL$(session_members "$session")"
		elif kill -0 "$session" 2>/dev/null; then
			c_found="$c_found$NL$session"
		fi
	fi
	LIVE=
	for c_pid in $c_found; do
		case " $LIVE " in
		*" $c_pid "*) continue ;;
		esac
		is_kin "$c_pid" && continue
		LIVE="$LIVE $c_pid"
	done
}

# SIGNAL to the run's process group, and to each process outside that group.
signal_live() {
	if [ -n "$session" ]; then
		kill -s "$1" -- "-$session" 2>/dev/null
	fi
	for s_pid in $LIVE; do
		if [ -n "$session" ] && proc_stat "$s_pid" && [ "$ST_PGRP" = "$session" ]; then
			continue
		fi
		kill -s "$1" "$s_pid" 2>/dev/null
	done
}

SIGNALLED=
# Signals only the processes not signalled yet (spawned, or found, since).
signal_newcomers() {
	for n_pid in $LIVE; do
		case " $SIGNALLED " in
		*" $n_pid "*) ;;
		*)
			SIGNALLED="$SIGNALLED $n_pid"
			kill -s "$1" "$n_pid" 2>/dev/null
			;;
		esac
	done
}

# Poll up to N naps until nothing of the run is left; newcomers get SIGNAL too, unless it
# is empty: during the grace a process the run starts (a checkpoint writer, a launcher's
# cleanup) is part of its shutdown and is left to finish.
wait_gone() {
	w_left=$1
	# Most processes end within milliseconds of the signal: look again almost at once
	# rather than a whole nap later.
	if [ "$NAP_PER_SECOND" = 10 ]; then
		sleep 0.02
		collect
		[ -z "$LIVE" ] && return 0
	fi
	while [ "$w_left" -gt 0 ]; do
		nap
		collect
		[ -z "$LIVE" ] && return 0
		[ -n "$2" ] && signal_newcomers "$2"
		w_left=$((w_left - 1))
	done
	collect
	[ -z "$LIVE" ]
}

# After the outcome: the `run` line of status.sh, now that nothing of the run is alive.
emit_state() {
	run_state "$RUN_DIR" "$run_id"
	emit run "$run_id" "$RS_STATE" "$RS_EXIT" "$RS_SIGNAL" "$RS_STARTED" "$RS_DETAIL" "$RS_STALLED" "$RS_FAILED_AT" "$RS_RANK0"
}

# A run in a container (rtrain-container): the container goes too, also when its runtime's
# client was killed before it could remove it.
remove_container() {
	[ -f "$RUN_DIR/container" ] || return 0
	rc_runtime=
	{ IFS= read -r rc_runtime <"$RUN_DIR/container"; } 2>/dev/null
	case $rc_runtime in
	podman | docker) "$rc_runtime" rm -f "rtrain-$run_id" >/dev/null 2>&1 ;;
	esac
	return 0
}

collect
if [ -z "$LIVE" ]; then
	remove_container
	end_watcher "$run_id"
	emit outcome not_running
	emit_state
	exit 0
fi
if [ -d "$RUN_DIR" ]; then
	own_dir "$RUN_DIR"
	printf '%s\n' "$(date +%s)" >"$BOOK/stop_requested" 2>/dev/null ||
		say "could not write $BOOK/stop_requested"
fi
SIGNALLED=$LIVE
signal_live TERM
if ! wait_gone "$grace_naps" "" && [ "$force" = 1 ]; then
	signal_live KILL
	for k_pid in $LIVE; do
		case " $SIGNALLED " in
		*" $k_pid "*) ;;
		*) SIGNALLED="$SIGNALLED $k_pid" ;;
		esac
	done
	wait_gone "$((3 * NAP_PER_SECOND))" KILL
fi

collect
[ -z "$LIVE" ] && end_watcher "$run_id"
set -f
if [ -z "$LIVE" ]; then
	remove_container
	emit outcome stopped
	# shellcheck disable=SC2086 # a list of pids, split on purpose
	set -- $SIGNALLED
	emit killed "$*"
	set +f
	emit_state
	exit 0
fi
for s_pid in $LIVE; do
	s_name='?'
	{ IFS= read -r s_name <"/proc/$s_pid/comm"; } 2>/dev/null
	say "still alive: pid $s_pid ($s_name)"
done
emit outcome survived
# shellcheck disable=SC2086 # a list of pids, split on purpose
set -- $LIVE
emit survivors "$*"
exit "$E_SURVIVED"
