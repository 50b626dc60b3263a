# A run's processes, found through /proc: its marker in their environment, its session.
GREP_Z=
KIN_ANCESTORS=
ST_STATE='' ST_PPID='' ST_PGRP='' ST_SID=''

have_proc() {
	[ -r /proc/self/stat ]
}

# Fields of /proc/PID/stat -> ST_STATE ST_PPID ST_PGRP ST_SID; 1 if the process is gone.
proc_stat() {
	ps_line=
	{ IFS= read -r ps_line <"/proc/$1/stat"; } 2>/dev/null || [ -n "$ps_line" ] || return 1
	[ -n "$ps_line" ] || return 1
	# The command name (in parentheses) may hold spaces and parentheses: cut after the last ") ".
	ps_rest=${ps_line##*) }
	set -f
	# shellcheck disable=SC2086 # split on purpose: the fields are numbers and one letter
	set -- $ps_rest
	set +f
	ST_STATE=$1 ST_PPID=$2 ST_PGRP=$3 ST_SID=$4
}

# True while PID exists and is not a zombie (a zombie has already ended).
pid_alive() {
	is_uint "$1" || return 1
	if have_proc; then
		proc_stat "$1" || return 1
		[ "$ST_STATE" != Z ] && [ "$ST_STATE" != X ]
	else
		kill -0 "$1" 2>/dev/null
	fi
}

grep_z_ok() {
	if [ -z "$GREP_Z" ]; then
		if printf 'a\0b\0' | grep -qzxF -e b 2>/dev/null; then
			GREP_Z=1
		else
			GREP_Z=0
		fi
	fi
	[ "$GREP_Z" = 1 ]
}

# True iff /proc/PID/environ holds exactly `RTRAIN_RUN_ID=<run_id>` as one entry.
has_marker() {
	[ -r "/proc/$1/environ" ] || return 1
	if grep_z_ok; then
		grep -qszxF -e "RTRAIN_RUN_ID=$2" "/proc/$1/environ"
	else
		# NUL ends an entry; a newline inside a value must not split it, so swap the two.
		{ tr '\0\n' '\n\001' <"/proc/$1/environ"; } 2>/dev/null | grep -qxF -e "RTRAIN_RUN_ID=$2"
	fi
}

# The caller itself, its ancestors and its descendants (its own subshells and tools) are
# never part of a run, even when the caller inherited a run's marker.
is_kin() {
	[ "$1" = "$$" ] && return 0
	have_proc || return 1
	if [ -z "$KIN_ANCESTORS" ]; then
		KIN_ANCESTORS=" "
		ik_pid=$$
		while proc_stat "$ik_pid" && [ "$ST_PPID" -gt 0 ]; do
			KIN_ANCESTORS="$KIN_ANCESTORS$ST_PPID "
			ik_pid=$ST_PPID
		done
	fi
	case $KIN_ANCESTORS in
	*" $1 "*) return 0 ;;
	esac
	ik_pid=$1
	while proc_stat "$ik_pid"; do
		[ "$ST_PPID" = "$$" ] && return 0
		[ "$ST_PPID" -gt 1 ] || return 1
		ik_pid=$ST_PPID
	done
	return 1
}

# Every live pid whose environment carries the run's marker, one per line, caller excluded.
marked_pids() {
	have_proc || return 0
	# The glob below must expand even for a caller in `set -f` (it ends with `set +f` anyway).
	set +f
	if grep_z_ok; then
		mp_files=$(grep -lszxF -e "RTRAIN_RUN_ID=$1" /proc/[0-9]*/environ)
	else
		mp_files=
		for mp_dir in /proc/[0-9]*; do
			if has_marker "${mp_dir#/proc/}" "$1"; then
				mp_files="$mp_files$mp_dir/environ$NL"
			fi
		done
	fi
	set -f
	for mp_file in $mp_files; do
		mp_pid=${mp_file#/proc/}
		mp_pid=${mp_pid%/environ}
		is_uint "$mp_pid" || continue
		is_kin "$mp_pid" && continue
		pid_alive "$mp_pid" || continue
		printf '%s\n' "$mp_pid"
	done
	set +f
}
