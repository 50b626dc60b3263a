# rtrain-needs: processes nap
# guard.sh WORKDIR arm IDLE_SECONDS IGNORE_SESSIONS(0|1) COMMAND [STALLED_IDLE(0|1)]: (re)arm
#   the host's guard for WORKDIR; stdin carries the guard's own text (its libraries and
#   guard_loop.sh). Replaces a guard armed before, settings and process. With STALLED_IDLE 1
#   a stalled run (limits.sh's `stalled` file) counts as idle. Then as `show`.
# guard.sh WORKDIR off: disarm (the process ends); then as `show`.
# guard.sh WORKDIR show: `guard armed|off`, and where known `pid PID`,
#   `settings IDLE IGNORE STALLED_IDLE`, `seen idle|busy CHECKED_AT SINCE|REASON`,
#   `last AT EXIT IDLE_SINCE`, `now EPOCH`, `command TEXT` (flattened).
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
mode=$2
dir=$workdir/.guard

# The pid of the guard's live process for this work directory, or 1.
guard_pid() {
	gp_pid=
	{ IFS= read -r gp_pid <"$dir/pid"; } 2>/dev/null
	is_uint "$gp_pid" && [ "$gp_pid" -gt 1 ] || return 1
	pid_alive "$gp_pid" || return 1
	have_proc || return 0
	[ -r "/proc/$gp_pid/environ" ] || return 1
	tr '\0\n' '\n\001' <"/proc/$gp_pid/environ" 2>/dev/null | grep -qxF -e "RTRAIN_GUARD=$dir" || return 1
	GUARD_PID=$gp_pid
}

# End the guard armed before, if any: it also ends by itself once the generation changed.
end_guard() {
	rm -f -- "$dir/generation"
	if guard_pid; then
		kill "$GUARD_PID" 2>/dev/null
		nap_init
		eg_naps=0
		while pid_alive "$GUARD_PID" && [ "$eg_naps" -lt $((NAP_PER_SECOND * 5)) ]; do
			nap
			eg_naps=$((eg_naps + 1))
		done
		pid_alive "$GUARD_PID" && kill -s KILL "$GUARD_PID" 2>/dev/null
	fi
	rm -f -- "$dir/pid" "$dir/seen"
}

show() {
	if guard_pid && [ -f "$dir/generation" ]; then
		emit guard armed
		emit pid "$GUARD_PID"
	else
		emit guard off
	fi
	if [ -f "$dir/settings" ]; then
		sw_idle='' sw_ignore='' sw_stalled=''
		{ IFS= read -r sw_idle && IFS= read -r sw_ignore && IFS= read -r sw_stalled; } \
			<"$dir/settings" 2>/dev/null
		emit settings "$sw_idle" "$sw_ignore" "${sw_stalled:-0}"
	fi
	[ -f "$dir/command" ] && emit command "$(flat "$(cat "$dir/command")")"
	sw_line=
	[ -f "$dir/seen" ] && { IFS= read -r sw_line <"$dir/seen"; } 2>/dev/null
	[ -n "$sw_line" ] && printf 'seen\t%s\n' "$sw_line"
	sw_line=
	[ -f "$dir/last" ] && { IFS= read -r sw_line <"$dir/last"; } 2>/dev/null
	[ -n "$sw_line" ] && printf 'last\t%s\n' "$sw_line"
	emit now "$(date +%s)"
	exit 0
}

case $mode in
show) show ;;
off)
	end_guard
	show
	;;
arm)
	need_args "$#" 5
	idle=$3
	ignore=$4
	command=$5
	stalled=${6:-0}
	{ is_uint "$idle" && [ "${#idle}" -le 9 ] && [ "$idle" -ge 1 ]; } || fail "$E_USAGE" bad_idle
	case $ignore$stalled in
	00 | 01 | 10 | 11) ;;
	*) fail "$E_USAGE" usage ;;
	esac
	[ -n "$command" ] || fail "$E_USAGE" no_command
	mkdir -p -- "$dir" 2>/dev/null || fail "$E_WRITE" mkdir "$dir"
	end_guard
	{
		cat >"$dir/loop.tmp" &&
			mv -f "$dir/loop.tmp" "$dir/loop.sh" &&
			printf '%s\n%s\n%s\n' "$idle" "$ignore" "$stalled" >"$dir/settings" &&
			printf '%s' "$command" >"$dir/command"
	} 2>/dev/null || fail "$E_WRITE" write "$dir"
	[ -s "$dir/loop.sh" ] || fail "$E_USAGE" no_loop
	generation=$(date +%s)-$$
	printf '%s\n' "$generation" >"$dir/generation" || fail "$E_WRITE" write "$dir"
	setsid_bin=$(command -v setsid 2>/dev/null) || setsid_bin=
	# Its own session (no terminal, no hangup from ssh or a console's PTY), stdio away from
	# the channel so ssh returns at once.
	if [ -n "$setsid_bin" ]; then
		RTRAIN_GUARD=$dir "$setsid_bin" sh "$dir/loop.sh" "$workdir" "$generation" \
			</dev/null >/dev/null 2>>"$dir/log" &
	else
		(
			trap '' HUP
			RTRAIN_GUARD=$dir exec sh "$dir/loop.sh" "$workdir" "$generation"
		) </dev/null >/dev/null 2>>"$dir/log" &
	fi
	nap_init
	waited=0
	until guard_pid; do
		[ "$waited" -lt $((NAP_PER_SECOND * 10)) ] || fail "$E_NO_DETACH" no_guard
		nap
		waited=$((waited + 1))
	done
	show
	;;
*) fail "$E_USAGE" usage ;;
esac
