# rtrain-needs: processes nap
# Ending what belongs to a run: its session's processes and its limits watchers.

# Live pids whose session or process group is SID (the run's session leader), one per line.
session_members() {
	have_proc || return 0
	# One reader for all stat files; a line without ") " or a non-numeric pid is a fragment of
	# a command name holding a newline and is skipped.
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v sid="$1" '
		$1 ~ /^[0-9]+$/ {
			rest = $0
			if (!sub(/^.*\) /, "", rest)) next
			n = split(rest, f, " ")
			if (n < 4 || f[1] == "Z" || f[1] == "X") next
			if (f[3] == sid || f[4] == sid) print $1
		}'
}

# end_watcher RUN_ID: end the limits watchers of the run in RUN_DIR (limits.sh: each the
# leader of a session of its own, without the marker) and their `sleep`s: one would end by
# itself within its interval once its attempt is over; a stop or a removal ends them before
# it answers, so nothing of the run outlives the answer. Every attempt's watcher is found by
# its argv (`/bin/sh ./rtrain-limits RUN_DIR RUN_ID`), not only the one limits.pid names: a
# restart's earlier watcher may still be in its last sleep. Not when the caller is a
# watcher's own stop (it runs stop.sh as its child). Needs nap_init.
end_watcher() {
	have_proc || return 0
	ew_want="/bin/sh$NL./rtrain-limits$NL$RUN_DIR$NL$1"
	ew_pids=
	set +f
	for ew_cmdline in /proc/[0-9]*/cmdline; do
		ew_pid=${ew_cmdline#/proc/}
		ew_pid=${ew_pid%/cmdline}
		ew_argv=$({ tr '\0' '\n' <"$ew_cmdline"; } 2>/dev/null | head -n 4)
		[ "$ew_argv" = "$ew_want" ] || continue
		is_kin "$ew_pid" && continue
		ew_pids="$ew_pids $ew_pid"
	done
	for ew_pid in $ew_pids; do
		kill -s TERM -- "-$ew_pid" 2>/dev/null || kill -s TERM "$ew_pid" 2>/dev/null
	done
	for ew_pid in $ew_pids; do
		ew_left=$((3 * NAP_PER_SECOND))
		while [ -n "$(session_members "$ew_pid")" ]; do
			if [ "$ew_left" -le 0 ]; then
				kill -s KILL -- "-$ew_pid" 2>/dev/null
				break
			fi
			nap
			ew_left=$((ew_left - 1))
		done
	done
	return 0
}
