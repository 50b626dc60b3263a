# rtrain-needs: run_dir processes run_meta failure run_state own_files
# limits.sh RUN_DIR RUN_ID ATTEMPT MAX_SECONDS STALL_SECONDS ON_STALL GRACE: one attempt's
# limits, kept on the host itself, so they hold with the daemon and the laptop gone.
# launch.sh writes this text (after its libraries) as `rtrain-limits` in the run dir and starts it
# detached, in a session of its own and without the run's marker: it is no part of the run,
# so status and stop never count it. It ends when the attempt ends (or a later one begins),
# and a stop ends it (and its `sleep`) at once: its pid is in `limits.pid`.
#   MAX_SECONDS (0: none): once the attempt has run that long (from its launch, setup
#     included; from the end of its wait when it was queued for GPUs), the run is stopped as
#     `rtrain stop --force` stops it (`rtrain-stop`, stop.sh's text, beside this one: TERM,
#     GRACE seconds, then KILL), after `limit_stop` says why: `max_duration SECONDS`.
#   STALL_SECONDS (0: none): while neither train.log nor metrics.jsonl has changed size for
#     that long, and the GPUs the run's processes use (where nvidia-smi names them; else the
#     GPUs it was given) sit below 5% utilisation, the file `stalled` holds the epoch second the run went still; it goes
#     as soon as the run moves again. ON_STALL `stop` then stops the run as above
#     (`limit_stop`: `stalled SECONDS`); `flag` only flags it.
need_args "$#" 7
take_run_dir "$1" "$2"
run_id=$2
attempt=$3
max=$4
stall=$5
on_stall=$6
grace=$7
for number in "$attempt" "$max" "$stall"; do
	{ is_uint "$number" && [ "${#number}" -le 9 ]; } || fail "$E_USAGE" usage
done
case $on_stall in
flag | stop) ;;
*) fail "$E_USAGE" usage ;;
esac
case $grace in
'' | . | *[!0-9.]* | *.*.*) fail "$E_USAGE" usage ;;
esac
cd "$RUN_DIR" 2>/dev/null || exit 0
# Its files are rtrain's, in the run's .rtrain/ (an older run's watcher wrote them beside).
own_dir "$RUN_DIR"
# This watcher (the leader of its own session), for a person to find.
printf '%s\n' "$$" >"$BOOK/limits.pid.tmp" 2>/dev/null && mv -f "$BOOK/limits.pid.tmp" "$BOOK/limits.pid"

# A look every 10 s, or every third of the stall limit when that is shorter; the duration
# limit is met on time whatever the interval (the sleep before it is cut to fit).
interval=10
if [ "$stall" -gt 0 ] && [ $((stall / 3)) -lt "$interval" ]; then
	interval=$((stall / 3))
fi
[ "$interval" -lt 1 ] && interval=1

# Stop the run, saying why first (the state's words come from limit_stop), and end.
stop_for() {
	printf '%s\n' "$1" >"$BOOK/limit_stop.tmp" 2>/dev/null && mv -f "$BOOK/limit_stop.tmp" "$BOOK/limit_stop"
	/bin/sh ./rtrain-stop "$RUN_DIR" "$run_id" "$grace" 1 </dev/null >/dev/null 2>&1
	exit 0
}

# The GPUs the run was given, as words between spaces (` 0 1 `, or UUIDs): its claims in the
# workdir (gpus.sh's gate), else the CUDA_VISIBLE_DEVICES one of its processes carries.
given_gpus() {
	gv_out=
	set +f
	for gv_claim in "${RUN_DIR%/*}/.gpus"/[0-9]*; do
		[ -f "$gv_claim" ] || continue
		gv_holder=
		{ read -r gv_holder _ <"$gv_claim"; } 2>/dev/null
		[ "$gv_holder" = "$run_id" ] && gv_out="$gv_out ${gv_claim##*/} "
	done
	if [ -z "$gv_out" ]; then
		for gv_pid in $(marked_pids "$run_id"); do
			gv_cvd=$({ tr '\0' '\n' <"/proc/$gv_pid/environ"; } 2>/dev/null |
				sed -n 's/^CUDA_VISIBLE_DEVICES=//p' | head -n 1)
			[ -n "$gv_cvd" ] || continue
			gv_out=" $(printf '%s' "$gv_cvd" | tr ',' ' ') "
			break
		done
	fi
	printf '%s' "$gv_out"
}

# True when a GPU the run computes on shows 5% utilisation or more: the GPUs nvidia-smi lists
# processes of the run on, or, where it lists none (inside containers, RunPod's among them,
# it often lists no process at all), the GPUs the run was given. False where nvidia-smi is
# missing or no GPU is the run's: the log alone decides then.
gpus_busy() {
	have nvidia-smi || return 1
	gb_mine=
	if gb_apps=$(nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader,nounits 2>/dev/null); then
		while IFS=', ' read -r gb_pid gb_uuid gb_rest; do
			is_uint "$gb_pid" || continue
			has_marker "$gb_pid" "$run_id" && gb_mine="$gb_mine $gb_uuid "
		done <<EOF
$gb_apps
EOF
	fi
	[ -n "$gb_mine" ] || gb_mine=$(given_gpus)
	[ -n "$gb_mine" ] || return 1
	gb_gpus=$(nvidia-smi --query-gpu=index,uuid,utilization.gpu --format=csv,noheader,nounits 2>/dev/null) ||
		return 1
	# shellcheck disable=SC2034 # gb_rest takes any column a newer nvidia-smi adds
	while IFS=', ' read -r gb_index gb_uuid gb_util gb_rest; do
		case $gb_mine in
		*" $gb_uuid "* | *" $gb_index "*) ;;
		*) continue ;;
		esac
		gb_util=${gb_util%%.*}
		is_uint "$gb_util" && [ "$gb_util" -ge 5 ] && return 0
	done <<EOF
$gb_gpus
EOF
	return 1
}

# The bytes the run has written so far, as one word that changes whenever either file grows
# or is replaced.
written() {
	wr_log=0
	wr_jsonl=0
	[ -f train.log ] && wr_log=$(size_of train.log 2>/dev/null)
	[ -f metrics.jsonl ] && wr_jsonl=$(size_of metrics.jsonl 2>/dev/null)
	printf '%s\n' "$wr_log/$wr_jsonl"
}

running_since=
was_queued=
still_since=
last_written=
while :; do
	[ -d "$RUN_DIR" ] || exit 0
	run_state "$RUN_DIR" "$run_id"
	# A restart's attempt has a watcher of its own.
	[ -z "$META_ATTEMPT" ] || [ "$META_ATTEMPT" = "$attempt" ] || exit 0
	now=$(date +%s)
	case $RS_STATE in
	queued)
		was_queued=1
		running_since=
		sleep "$interval"
		continue
		;;
	running) ;;
	*)
		rm -f "$BOOK/stalled"
		exit 0
		;;
	esac
	if [ -z "$running_since" ]; then
		running_since=$now
		[ -z "$was_queued" ] && [ -n "$META_STARTED" ] && [ "$META_STARTED" -le "$now" ] &&
			running_since=$META_STARTED
		still_since=$running_since
	fi
	if [ "$max" -gt 0 ] && [ $((now - running_since)) -ge "$max" ]; then
		stop_for "max_duration $max"
	fi
	if [ "$stall" -gt 0 ]; then
		written_now=$(written)
		if [ "$written_now" != "$last_written" ]; then
			[ -n "$last_written" ] && still_since=$now
			last_written=$written_now
		fi
		if [ $((now - still_since)) -ge "$stall" ] && gpus_busy; then
			still_since=$now
		fi
		if [ $((now - still_since)) -ge "$stall" ]; then
			flagged=
			{ IFS= read -r flagged <"$BOOK/stalled"; } 2>/dev/null
			if [ "$flagged" != "$still_since" ]; then
				printf '%s\n' "$still_since" >"$BOOK/stalled.tmp" 2>/dev/null && mv -f "$BOOK/stalled.tmp" "$BOOK/stalled"
			fi
			[ "$on_stall" = stop ] && stop_for "stalled $stall"
		elif [ -e "$BOOK/stalled" ]; then
			rm -f "$BOOK/stalled"
		fi
	fi
	pause=$interval
	if [ "$max" -gt 0 ]; then
		left=$((running_since + max - now))
		[ "$left" -lt "$pause" ] && pause=$left
		[ "$pause" -lt 1 ] && pause=1
	fi
	sleep "$pause"
done
