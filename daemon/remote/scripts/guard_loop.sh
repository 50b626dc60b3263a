# guard_loop.sh WORKDIR GENERATION: the guard itself, detached by guard.sh (which writes this
# text, after common.sh, to WORKDIR/.guard/loop.sh). It looks at the host every INTERVAL
# seconds; once the host has been idle for IDLE seconds it runs the command once for that
# idle period. It ends when WORKDIR/.guard/generation no longer names GENERATION (disarmed or
# armed again).
workdir=$1
generation=$2
dir=$workdir/.guard
printf '%s\n' "$$" >"$dir/pid.tmp" && mv -f "$dir/pid.tmp" "$dir/pid"
idle=
ignore=
{ IFS= read -r idle && IFS= read -r ignore; } <"$dir/settings" 2>/dev/null
is_uint "$idle" || exit 0
interval=$((idle / 3))
[ "$interval" -gt 10 ] && interval=10
[ "$interval" -lt 1 ] && interval=1

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
		case $RS_STATE in
		running | queued)
			HOST_BUSY="run $lk_id is $RS_STATE"
			return 0
			;;
		esac
	done
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
