# rtrain-needs: processes nap failure run_state
# guard_loop.sh WORKDIR GENERATION: the guard itself, detached by guard.sh (which writes this
# text, after its libraries, to WORKDIR/.guard/loop.sh). It looks at the host every INTERVAL
# seconds; once the host has been idle for IDLE seconds it runs the command once for that
# idle period. It ends when WORKDIR/.guard/generation no longer names GENERATION (disarmed or
# armed again).
# The daemon also runs this script once, for what the loop knows:
# guard_loop.sh WORKDIR look IGNORE_SESSIONS: `idle` or `busy REASON`, the loop's own look.
# guard_loop.sh WORKDIR terminate FORCE WAIT armed|given [COMMAND]: `rtrain terminate`. Unless
#   FORCE, refuses (`busy REASON`, exit 5) when a run is running or queued or a transfer
#   lease is live (sessions do not count: the person asking is often logged in). Runs
#   COMMAND (`armed`: the guard's command) detached, in a session of its own (a command that
#   ends the host may end this ssh session first), recording it in the guard's log as a
#   firing is; waits up to WAIT seconds for it: `exit N` and its `output` lines (the last
#   4 KiB), or `running`; `command TEXT` (flattened) says what it ran. No command:
#   `error no_command`, exit 8.
workdir=$1
generation=$2
dir=$workdir/.guard
ignore=
stalled_idle=0
case $generation in
look | terminate)
	# The daemon's WORKDIR, as it writes it (guard.sh hands the loop an absolute one).
	workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
	dir=$workdir/.guard
	;;
*)
	printf '%s\n' "$$" >"$dir/pid.tmp" && mv -f "$dir/pid.tmp" "$dir/pid"
	idle=
	{ IFS= read -r idle && IFS= read -r ignore && IFS= read -r stalled_idle; } \
		<"$dir/settings" 2>/dev/null
	is_uint "$idle" || exit 0
	interval=$((idle / 3))
	[ "$interval" -gt 10 ] && interval=10
	[ "$interval" -lt 1 ] && interval=1
	;;
esac

current() {
	cg_value=
	{ IFS= read -r cg_value <"$dir/generation"; } 2>/dev/null
	[ "$cg_value" = "$generation" ]
}

# HOST_BUSY: why the host is not idle, or empty when it is. What cannot be read is busy.
look() {
	HOST_BUSY=
	if ! [ -d "$workdir" ] || ! [ -r "$workdir" ]; then
		HOST_BUSY='the work directory cannot be read'
		return 0
	fi
	set +f
	for lk_dir in "$workdir"/*; do
		[ -d "$lk_dir" ] || continue
		lk_id=${lk_dir##*/}
		valid_run_id "$lk_id" || continue
		run_state "$lk_dir" "$lk_id"
		# A host that opted in lets a stalled run (limits.sh: log still, GPUs idle) be idle.
		[ "$stalled_idle" = 1 ] && [ "$RS_STATE" = running ] && [ "$RS_STALLED" != - ] && continue
		# A Jupyter kernel (rtrain kernel) is busy while a cell runs (`kernel_busy`), not for
		# merely being open.
		[ "$RS_STATE" = running ] && [ -f "$lk_dir/rtrain-kernel" ] && ! [ -f "$lk_dir/kernel_busy" ] && continue
		case $RS_STATE in
		running | queued)
			HOST_BUSY="run $lk_id is $RS_STATE"
			return 0
			;;
		esac
	done
	# The daemon's transfer leases (lease.sh): one not expired by the host's clock is busy.
	if [ -d "$workdir/.leases" ]; then
		lk_now=$(date +%s)
		for lk_lease in "$workdir"/.leases/*; do
			[ -f "$lk_lease" ] || continue
			case $lk_lease in *.tmp) continue ;; esac
			lk_until=
			{ IFS= read -r lk_until <"$lk_lease"; } 2>/dev/null
			if ! is_uint "$lk_until"; then
				HOST_BUSY="the transfer lease ${lk_lease##*/} cannot be read"
				return 0
			fi
			if [ "$lk_until" -gt "$lk_now" ]; then
				HOST_BUSY='a transfer is in flight'
				return 0
			fi
		done
	elif [ -e "$workdir/.leases" ]; then
		HOST_BUSY='the transfer leases cannot be read'
		return 0
	fi
	[ "$ignore" = 1 ] && return 0
	if ! have_proc || ! [ -r /proc/1/stat ]; then
		HOST_BUSY='the process table cannot be read, so open ssh sessions cannot be ruled out'
		return 0
	fi
	# Sessions with a pseudo-terminal (tty major 136-143) -> "SID PID" (one process of each).
	lk_ttys=$(cat /proc/[0-9]*/stat 2>/dev/null | awk '
		$1 ~ /^[0-9]+$/ {
			rest = $0
			if (!sub(/^.*\) /, "", rest)) next
			n = split(rest, f, " ")
			if (n < 5 || f[1] == "Z" || f[1] == "X") next
			major = int(f[5] / 256) % 4096
			if (major >= 136 && major <= 143 && !(f[4] in seen)) {
				seen[f[4]] = 1
				print f[4], $1
			}
		}')
	set -f
	# shellcheck disable=SC2086 # pairs of numbers
	set -- $lk_ttys
	set +f
	while [ "$#" -ge 2 ]; do
		lk_sid=$1 lk_pid=$2
		shift 2
		# rtrain's console transport: its login shell became the agent's bootstrap
		# (`sh -c 'printf "\n\122\124:...`), the session's leader.
		if [ -r "/proc/$lk_sid/cmdline" ] &&
			tr '\0' '\n' <"/proc/$lk_sid/cmdline" 2>/dev/null | grep -qF -e 'printf "\n\122\124:%s:0:R\n"'; then
			continue
		fi
		lk_walk=$lk_pid
		while proc_stat "$lk_walk" && [ "$ST_PPID" -gt 1 ]; do
			lk_walk=$ST_PPID
			lk_comm=
			{ IFS= read -r lk_comm <"/proc/$lk_walk/comm"; } 2>/dev/null
			case $lk_comm in
			sshd*)
				HOST_BUSY='an interactive ssh session is open'
				return 0
				;;
			esac
		done
	done
	return 0
}

fire() {
	{
		printf '%s fired: the host was idle since %s (%s s)\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" \
			"$(date -u -d "@$idle_since" '+%Y-%m-%dT%H:%M:%SZ' 2>/dev/null || printf '%s' "$idle_since")" "$idle"
		printf '%s\n' '--- output ---'
	} >>"$dir/log"
	(cd "$HOME" 2>/dev/null || cd /; umask "$CALLER_UMASK"; exec sh -c "$(cat "$dir/command")") \
		</dev/null >>"$dir/log" 2>&1
	fire_rc=$?
	printf '%s exit %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$fire_rc" >>"$dir/log"
	printf '%s\t%s\t%s\n' "$(date +%s)" "$fire_rc" "$idle_since" >"$dir/last.tmp" &&
		mv -f "$dir/last.tmp" "$dir/last"
}

# `rtrain terminate`'s command, in a session of its own: its output and exit status go to
# the files OUT and OUT.exit and, once it ended, into the guard's log.
terminate_now() {
	tn_out=$1
	tn_command=$2
	# shellcheck disable=SC2016 # a script of its own: it expands its own words when it runs
	tn_runner='out=$1 log=$2 command=$3
cd "$HOME" 2>/dev/null || cd /
umask "$4"
sh -c "$command" </dev/null >"$out" 2>&1
rc=$?
cat "$out" >>"$log" 2>/dev/null
printf "%s exit %s\n" "$(date -u "+%Y-%m-%dT%H:%M:%SZ")" "$rc" >>"$log"
printf "%s\n" "$rc" >"$out.exit.tmp" && mv -f "$out.exit.tmp" "$out.exit"'
	if have setsid; then
		setsid sh -c "$tn_runner" rtrain "$tn_out" "$dir/log" "$tn_command" "$CALLER_UMASK" \
			</dev/null >/dev/null 2>&1 &
	else
		(
			trap '' HUP
			exec sh -c "$tn_runner" rtrain "$tn_out" "$dir/log" "$tn_command" "$CALLER_UMASK"
		) </dev/null >/dev/null 2>&1 &
	fi
}

case $generation in
look)
	need_args "$#" 3
	ignore=$3
	case $ignore in
	0 | 1) ;;
	*) fail "$E_USAGE" usage ;;
	esac
	look
	if [ -n "$HOST_BUSY" ]; then
		emit busy "$(flat "$HOST_BUSY")"
	else
		emit idle
	fi
	exit 0
	;;
terminate)
	need_args "$#" 5
	force=$3
	wait_s=$4
	{ is_uint "$wait_s" && [ "${#wait_s}" -le 4 ]; } || fail "$E_USAGE" usage
	case $5 in
	armed) command=$(cat "$dir/command" 2>/dev/null) || command= ;;
	given)
		need_args "$#" 6
		command=$6
		;;
	*) fail "$E_USAGE" usage ;;
	esac
	[ -n "$command" ] || fail "$E_NOT_FOUND" no_command
	# A work directory never made holds no run and no lease.
	if [ "$force" != 1 ] && [ -e "$workdir" ]; then
		ignore=1
		look
		[ -z "$HOST_BUSY" ] || fail "$E_REFUSED" busy "$(flat "$HOST_BUSY")"
	fi
	mkdir -p -- "$dir" 2>/dev/null || fail "$E_WRITE" mkdir "$dir"
	out=$dir/terminate-$(date +%s)-$$
	{
		how='rtrain terminate'
		[ "$force" = 1 ] && how='rtrain terminate --force'
		printf '%s %s: %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$how" "$(flat "$command")"
		printf '%s\n' '--- output ---'
	} >>"$dir/log" 2>/dev/null || fail "$E_WRITE" write "$dir/log"
	# Left by earlier ones that ran longer than their wait.
	find "$dir" -maxdepth 1 -name 'terminate-*' -mmin +60 -exec rm -f {} + 2>/dev/null
	terminate_now "$out" "$command"
	emit started "$(date +%s)"
	emit command "$(flat "$command")"
	nap_init
	naps=0
	until [ -f "$out.exit" ] || [ "$naps" -ge $((NAP_PER_SECOND * wait_s)) ]; do
		nap
		naps=$((naps + 1))
	done
	if [ -f "$out.exit" ]; then
		rc=
		{ IFS= read -r rc <"$out.exit"; } 2>/dev/null
		emit exit "$rc"
		tail -c 4096 "$out" 2>/dev/null | while IFS= read -r line || [ -n "$line" ]; do
			emit output "$(flat "$line")"
		done
		rm -f -- "$out" "$out.exit"
	else
		emit running
	fi
	exit 0
	;;
esac

idle_since=
fired_for=
while current; do
	look
	now=$(date +%s)
	if [ -n "$HOST_BUSY" ]; then
		idle_since=
		printf 'busy\t%s\t%s\n' "$now" "$(flat "$HOST_BUSY")" >"$dir/seen.tmp"
	else
		[ -n "$idle_since" ] || idle_since=$now
		printf 'idle\t%s\t%s\n' "$now" "$idle_since" >"$dir/seen.tmp"
	fi
	mv -f "$dir/seen.tmp" "$dir/seen"
	if [ -n "$idle_since" ] && [ "$fired_for" != "$idle_since" ] &&
		[ $((now - idle_since)) -ge "$idle" ] && current; then
		fired_for=$idle_since
		fire
	fi
	sleep "$interval"
done
exit 0
