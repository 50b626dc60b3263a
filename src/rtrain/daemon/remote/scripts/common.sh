# rtrain far-side library. The daemon runs every operation as
#   sh -c "$(cat common.sh OP.sh)" rtrain ARG...
# so this file only defines functions and state; the operation's script does the work.
# Output protocol: tab-separated `key<TAB>value...` lines on stdout; messages for humans on stderr.

# Start from known state: none of these may be inherited from the caller's environment.
unset CDPATH GREP_OPTIONS
GREP_Z=
KIN_ANCESTORS=
BOOT_NOW=
ST_STATE='' ST_PPID='' ST_PGRP='' ST_SID=''
META_STARTED='' META_BOOT='' META_ATTEMPT=''
PF_PID=
NAP_PER_SECOND=
REAL_RUN='' REAL_PATH='' REL='' TARGET=''
RS_STATE='' RS_EXIT='' RS_SIGNAL='' RS_STARTED='' RS_DETAIL='' RS_REBOOTED='' RS_STALLED='' RS_FAILED_AT='' RS_RANK0=''
TAB=$(printf '\t')
NL='
'
# Files of rtrain's own are private; the trainer gets the caller's umask back (launch.sh).
CALLER_UMASK=$(umask)
umask 077

# Exit codes shared by all scripts (docs/remote-scripts.md lists them).
E_USAGE=2
E_MISMATCH=3
E_WRITE=4
E_REFUSED=5
E_SURVIVED=6
E_OUTSIDE=7
E_NOT_FOUND=8
E_BAD_NAME=9
E_BAD_SECRET=10
E_NO_DETACH=11
E_LAUNCH_TIMEOUT=12
E_IO=14
E_ALREADY_LAUNCHED=15
E_RUN_EXISTS=17
E_GPUS_BUSY=18
E_SCHEDULER=20
E_NOT_A_RUN=21

# One protocol line: the first argument is the key, the rest are tab-separated fields.
emit() {
	printf '%s' "$1"
	shift
	for emit_field in "$@"; do
		printf '\t%s' "$emit_field"
	done
	printf '\n'
}

say() {
	printf 'rtrain: %s\n' "$*" >&2
}

# A message fit for one protocol field: tabs and line breaks become spaces.
flat() {
	printf '%s' "$1" | tr '\t\r\n' '   '
}

# `error<TAB>KIND<TAB>...` on stdout, then exit with CODE.
fail() {
	fail_code=$1
	shift
	emit error "$@"
	exit "$fail_code"
}

have() {
	command -v "$1" >/dev/null 2>&1
}

# True when an open descriptor can be opened again by its name /dev/fd/N (Linux, a BSD with
# fdescfs), as send.sh and receive.sh reach their hasher. `true`, not `:`: a failed
# redirection of a special built-in would end the whole script.
fd_by_name() {
	{ true >/dev/fd/4; } 4>/dev/null 2>/dev/null
}

have_proc() {
	[ -r /proc/self/stat ]
}

is_uint() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

valid_run_id() {
	case $1 in
	'' | [!A-Za-z0-9]* | *[!A-Za-z0-9._-]*) return 1 ;;
	esac
	[ "${#1}" -le 64 ]
}

# WORKDIR (or any far-side path the daemon sends) -> absolute path on stdout.
# `~` and `~/...` mean $HOME; a relative path is relative to $HOME (ssh starts there).
# `~user` is not supported: returns 1.
expand_workdir() {
	ew_home=${HOME%/}
	# shellcheck disable=SC2088 # the word as typed, tilde and all: expanded here
	case $1 in
	'') return 1 ;;
	'~') ew_path=$ew_home/ ;;
	'~/'*) ew_path=$ew_home/${1#??} ;;
	'~'*) return 1 ;;
	/*) ew_path=$1 ;;
	*) ew_path=$ew_home/$1 ;;
	esac
	case $1 in
	/*) ;;
	*) [ -n "$HOME" ] || return 1 ;;
	esac
	while :; do
		case $ew_path in
		/) break ;;
		*/) ew_path=${ew_path%/} ;;
		*) break ;;
		esac
	done
	printf '%s\n' "$ew_path"
}

# Hex sha256 of FILE on stdout, with whatever hasher the host has.
sha256_of() {
	# openssl first: it uses the CPU's SHA instructions, which coreutils' sha256sum does not
	# (three times as fast on a large file); but only one that hashes at all (FIPS builds).
	if have openssl && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then
		sh_digest=$(openssl dgst -sha256 -r <"$1") || return 1
	elif have sha256sum; then
		sh_digest=$(sha256sum <"$1") || return 1
	elif have shasum; then
		sh_digest=$(shasum -a 256 <"$1") || return 1
	else
		sh_py=
		for sh_candidate in python3 python; do
			if have "$sh_candidate"; then
				sh_py=$sh_candidate
				break
			fi
		done
		[ -n "$sh_py" ] || return 1
		sh_digest=$("$sh_py" -c 'import hashlib, sys
digest = hashlib.sha256()
for block in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
    digest.update(block)
print(digest.hexdigest())' <"$1") || return 1
	fi
	sh_digest=${sh_digest%%[ 	*]*}
	[ -n "$sh_digest" ] || return 1
	printf '%s\n' "$sh_digest"
}

# Byte size of FILE on stdout.
size_of() {
	so_size=$(wc -c <"$1") || return 1
	so_size=${so_size##*[ 	]}
	printf '%s\n' "$so_size"
}

# The kernel's boot id, or an empty line where there is none.
boot_id() {
	bi_value=
	if [ -r /proc/sys/kernel/random/boot_id ]; then
		{ IFS= read -r bi_value </proc/sys/kernel/random/boot_id; } 2>/dev/null
	fi
	printf '%s\n' "$bi_value"
}

# Canonical path of an existing (or dangling-link) path on stdout.
real_path() {
	if have readlink && readlink -f -- / >/dev/null 2>&1; then
		readlink -f -- "$1"
	elif have realpath; then
		realpath -- "$1"
	else
		return 1
	fi
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

# meta.json -> META_STARTED META_BOOT META_ATTEMPT. launch.sh writes one key per line, so no
# JSON parser is needed here.
read_meta() {
	META_STARTED='' META_BOOT='' META_ATTEMPT=''
	rm_file=$1/.rtrain/meta.json
	[ -f "$rm_file" ] || rm_file=$1/meta.json
	[ -f "$rm_file" ] || return 0
	while IFS= read -r rm_line || [ -n "$rm_line" ]; do
		case $rm_line in
		'  "started_at": '*)
			rm_value=${rm_line#'  "started_at": '}
			rm_value=${rm_value%%,*}
			is_uint "$rm_value" && META_STARTED=$rm_value
			;;
		'  "attempt": '*)
			rm_value=${rm_line#'  "attempt": '}
			rm_value=${rm_value%%,*}
			is_uint "$rm_value" && META_ATTEMPT=$rm_value
			;;
		'  "boot_id": "'*)
			rm_value=${rm_line#'  "boot_id": "'}
			META_BOOT=${rm_value%%\"*}
			;;
		esac
		rm_line=
	done <"$rm_file"
}

# RUN_DIR -> OWN BOOK: where rtrain keeps the files that decide what it says of a run, in
# the run's private `.rtrain/`, which no trainer writing files of those names into its
# working directory reaches. OWN: `status` and `train.pid`; BOOK: every other one
# (`stop_requested`, `setup_failed`, `program_missing`, `env_failed`, `oom_killed`,
# `stalled`, `limit_stop`, `limits.pid`, `rank_failure`, `queued`, `attempt-N`,
# `train.jobid`). Runs an older rtrain launched are read where it wrote: no `.rtrain/`,
# all in RUN_DIR; a `.rtrain/` without `meta.json` (the first layout with one), only
# `status` and `train.pid` in it. This layout's `.rtrain/meta.json` is rtrain's record of
# the launch; the `meta.json` beside the trainer's files is a copy for people to read.
own_dir() {
	if [ -d "$1/.rtrain" ]; then
		OWN=$1/.rtrain
	else
		OWN=$1
	fi
	if [ -f "$1/.rtrain/meta.json" ]; then
		BOOK=$1/.rtrain
	else
		BOOK=$1
	fi
}

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

# True when meta.json names a boot other than the current one (the host rebooted).
rebooted_since_start() {
	[ -z "$BOOT_NOW" ] && BOOT_NOW=$(boot_id)
	[ -n "$META_BOOT" ] && [ -n "$BOOT_NOW" ] && [ "$META_BOOT" != "$BOOT_NOW" ]
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

# Why a run failed, as one line -> RS_DETAIL: the rank that failed first (rank_failure, as
# rtrain-ranks wrote it; else torchrun's summary), a death by signal, else what the log said
# last (its last exception line, else its last line). RUN_DIR CODE (the wrapper's status).
failure_reason() {
	fr_text=
	own_dir "$1"
	if [ -f "$BOOK/rank_failure" ]; then
		rank_failure_reason "$1" && return 0
	fi
	if [ -d "$1/torchrun_logs" ]; then
		torchrun_failure "$1"
		if [ -n "$fr_text" ]; then
			set_detail "$fr_text"
			return 0
		fi
	fi
	if [ "$2" -gt 128 ]; then
		signal_words "$(($2 - 128))" "$1" -
	else
		fr_found=$(last_words "$1/train.log")
		fr_rank=${fr_found#*"$TAB"}
		fr_rank=${fr_rank%%"$TAB"*}
		fr_text=${fr_found#*"$TAB"*"$TAB"}
		case $fr_found in
		"exception$TAB"* | "rtrain$TAB"*) ;;
		# train.log holds stdout too: a last line is a reason only when it reads like one
		# (`step 9 | loss 0.1` is not why a run failed).
		"line$TAB"*) reads_like_why "$fr_text" || fr_text= ;;
		*) fr_text= ;;
		esac
		[ -n "$fr_text" ] && [ "$fr_rank" != - ] && fr_text="rank $fr_rank: $fr_text"
	fi
	set_detail "$fr_text"
}

# True when a line of a log reads like an error message (what a failed program says last on
# stderr, where stdout and stderr share one log).
reads_like_why() {
	rw_text=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')
	case $rw_text in
	*error* | *fail* | *fatal* | *exception* | *abort* | *denied* | *"not found"* | *"no such"* | \
		*cannot* | *"can't"* | *"could not"* | *unable* | *invalid* | *refused* | *killed* | \
		*terminated* | *"out of memory"* | *segmentation* | *"not enough"* | *"timed out"* | \
		*panic* | *usage:* | *"no space"* | *missing*) return 0 ;;
	esac
	return 1
}

# RS_DETAIL <- TEXT as one line of at most 300 bytes; nothing for an empty TEXT.
set_detail() {
	[ -n "$1" ] || return 0
	RS_DETAIL=$(flat "$1" | cut -c 1-300)
	[ -n "$RS_DETAIL" ] || RS_DETAIL=-
}

# SIGNAL RUN_DIR PID -> fr_text: `killed by SIGKILL`, with `, out of memory?` where the
# kernel's word says so: the run's cgroup counted an OOM kill while it ran (`oom_killed`,
# from rtrain-run), or the kernel log, where it is readable, names PID as killed.
signal_words() {
	sw_name=$(kill -l "$1" 2>/dev/null) || sw_name=
	case $sw_name in
	'' | *[!A-Z0-9+-]*) fr_text="killed by signal $1" ;;
	SIG*) fr_text="killed by $sw_name" ;;
	*) fr_text="killed by SIG$sw_name" ;;
	esac
	[ "$1" = 9 ] || return 0
	own_dir "$2"
	if [ -e "$BOOK/oom_killed" ] ||
		{ is_uint "$3" && dmesg 2>/dev/null | grep -qi -e "killed process $3 "; }; then
		fr_text="$fr_text, out of memory?"
	fi
}

# rank_failure (rtrain-ranks: RANK EXIT SIGNAL PID STDERR ERROR_MESSAGE [TIME], `-` for none) ->
# RS_DETAIL `rank R: WHY`, or `rank R (exit N): WHY` for an exit other than 1; WHY is the
# rank's last exception line, else its error file's message, else its last stderr line.
# TIME (epoch seconds, the rank's last sign of life) -> RS_FAILED_AT: which node of a run
# across hosts failed first.
rank_failure_reason() {
	rf_line=
	own_dir "$1"
	{ IFS= read -r rf_line <"$BOOK/rank_failure"; } 2>/dev/null
	IFS=$TAB read -r rf_rank rf_exit rf_signal rf_pid rf_stderr rf_message rf_time <<RF_EOF
$rf_line
RF_EOF
	is_uint "$rf_rank" || return 1
	case $rf_time in
	'' | *[!0-9.]* | *.*.*) ;;
	*) RS_FAILED_AT=$rf_time ;;
	esac
	fr_text=
	case $rf_stderr in
	/*) ;;
	*) rf_stderr=$1/$rf_stderr ;;
	esac
	if is_uint "$rf_signal"; then
		signal_words "$rf_signal" "$1" "$rf_pid"
		# SIGABRT after a traceback: the exception ended the program and a library's
		# teardown aborted it (torch's process groups do); the exception says why.
		if [ "$rf_signal" = 6 ]; then
			rf_found=$(last_words "$rf_stderr")
			case $rf_found in
			"exception$TAB"*) fr_text="${rf_found#*"$TAB"*"$TAB"} (then $fr_text)" ;;
			esac
		fi
	else
		rf_found=$(last_words "$rf_stderr")
		case $rf_found in
		"exception$TAB"*) fr_text=${rf_found#*"$TAB"*"$TAB"} ;;
		*)
			if [ -n "$rf_message" ] && [ "$rf_message" != - ]; then
				fr_text=$rf_message
			elif [ -n "$rf_found" ]; then
				fr_text=${rf_found#*"$TAB"*"$TAB"}
			fi
			;;
		esac
	fi
	rf_who="rank $rf_rank"
	is_uint "$rf_exit" && [ "$rf_exit" != 1 ] && rf_who="$rf_who (exit $rf_exit)"
	set_detail "$rf_who${fr_text:+: $fr_text}"
}

# last_words LOG [RANK]: what a failed program said last, from the end of LOG: `exception
# RANK LINE` for the final line of its last Python traceback, else `line RANK LINE` for its
# last non-empty line (`rtrain RANK LINE` when that is rtrain's own message, such as the GPU
# gate's refusal); nothing for an empty log. A `[rankN]: ` prefix (torch's own, or
# rtrain-ranks') is read through: RANK is N, else `-`; with RANK given, other ranks' lines
# are skipped. rtrain's own `rtrain: ` before a message goes. A bar redrawn after the
# exception (tqdm's, at exit) is not its last word: the exception is.
last_words() {
	[ -f "$1" ] || return 0
	tail -c 65536 "$1" 2>/dev/null | tr '\r' '\n' | awk -v want="${2-}" '
		{
			line = $0; rank = "-"
			if (match(line, /^\[rank[0-9]+\]: ?/)) {
				rank = substr(line, 1, RLENGTH); gsub(/[^0-9]/, "", rank)
				line = substr(line, RLENGTH + 1)
			}
			if (want != "" && rank != "-" && rank != want) next
			# A traceback may start after a progress bar drawn with no newline (tqdm, Lightning).
			if (index(line, "Traceback (most recent call last):")) { tb[rank] = 1; next }
			if (line ~ /^[ \t]*$/) next
			if (tb[rank]) {
				if (line ~ /^[ \t]/) next
				tb[rank] = 0
				# torchrun agent exception says only that a rank failed
				if (line !~ /ChildFailedError/) { exc = line; erank = rank }
				next
			}
			if (line ~ /^==> rtrain: attempt /) next
			lkind = sub(/^rtrain: /, "", line) ? "rtrain" : "line"
			last = line; lrank = rank
		}
		END {
			if (exc != "") printf "exception\t%s\t%s\n", erank, exc
			else if (last != "") printf "%s\t%s\t%s\n", lkind, lrank, last
		}'
}

# A torchrun run that failed without rank_failure (its relay did not run): fr_text becomes
# `rank N: FIRST ERROR LINE`. From this attempt's error files of the ranks
# (TORCHELASTIC_ERROR_FILE, written by torch's @record), the first written; else from
# torchrun's own summary in the log (the root cause's rank and exit code) and that rank's
# last exception line in the log.
torchrun_failure() {
	tf_best='' tf_rank='' tf_message='' tf_exit=''
	# The glob must expand even for a caller in `set -f` (watch.sh).
	case $- in
	*f*) tf_noglob=1 ;;
	*) tf_noglob= ;;
	esac
	set +f
	for tf_file in "$1"/torchrun_logs/*/attempt_*/*/error.json; do
		[ -f "$tf_file" ] || continue
		tf_json=$(head -c 65536 "$tf_file" 2>/dev/null) || continue
		tf_text=$(printf '%s\n' "$tf_json" | json_first_string)
		[ -n "$tf_text" ] || continue
		tf_stamp=$(printf '%s\n' "$tf_json" | sed -n 's/.*"timestamp": "\([0-9]*\)".*/\1/p')
		# An earlier attempt's file (before a restart) is not this attempt's failure.
		if is_uint "$tf_stamp" && is_uint "$META_STARTED" && [ "$tf_stamp" -lt "$META_STARTED" ]; then
			continue
		fi
		# The file written first: its time to the nanosecond (the stamp inside has seconds).
		# shellcheck disable=SC3013 # dash, bash, busybox and zsh all have -ot; POSIX has no mtime test
		if [ -z "$tf_best" ] || [ "$tf_file" -ot "$tf_best" ]; then
			tf_best=$tf_file tf_message=$tf_text
			tf_rank=${tf_file%/error.json}
			tf_rank=${tf_rank##*/}
		fi
	done
	[ -n "$tf_noglob" ] && set -f
	if [ -z "$tf_best" ] && [ -f "$1/train.log" ]; then
		tf_found=$(tail -c 262144 "$1/train.log" 2>/dev/null | awk '
			/^Root Cause \(first observed failure\):/ { root = 1; rank = ""; code = ""; next }
			root && rank == "" && /^ *rank *: [0-9]+/ { sub(/^ *rank *: /, ""); rank = $1; next }
			root && code == "" && /^ *exitcode *: -?[0-9]+/ { sub(/^ *exitcode *: /, ""); code = $1; next }
			END { if (rank != "") printf "%s\t%s\n", rank, code }')
		tf_rank=${tf_found%%"$TAB"*}
		tf_exit=${tf_found#*"$TAB"}
		if [ -n "$tf_rank" ]; then
			tf_said=$(last_words "$1/train.log" "$tf_rank")
			case $tf_said in
			"exception$TAB"*) tf_message=${tf_said#*"$TAB"*"$TAB"} ;;
			esac
		fi
	fi
	[ -n "$tf_rank" ] || return 0
	case $tf_exit in
	-[0-9]*)
		signal_words "${tf_exit#-}" "$1" -
		fr_text="rank $tf_rank: $fr_text"
		return 0
		;;
	0 | [2-9] | [1-9][0-9]*) fr_text="rank $tf_rank (exit $tf_exit)" ;;
	*) fr_text="rank $tf_rank" ;;
	esac
	fr_text="$fr_text: ${tf_message:-see train.log}"
}

# The first JSON string value on stdin (`{"message": {"message": "TEXT"`), decoded: the
# escapes json.dump writes (quote, backslash, \n, \uXXXX and surrogate pairs) become their
# characters (UTF-8), a line break a space.
json_first_string() {
	LC_ALL=C awk '
		function hexval(h,   i, v) {
			v = 0; h = tolower(h)
			for (i = 1; i <= 4; i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v
		}
		function utf8(c) {
			if (c < 128) return sprintf("%c", c)
			if (c < 2048) return sprintf("%c%c", 192 + int(c / 64), 128 + c % 64)
			if (c < 65536) return sprintf("%c%c%c", 224 + int(c / 4096), 128 + int(c / 64) % 64, 128 + c % 64)
			return sprintf("%c%c%c%c", 240 + int(c / 262144), 128 + int(c / 4096) % 64, 128 + int(c / 64) % 64, 128 + c % 64)
		}
		{
			lead = "{\"message\": {\"message\": \""
			if (index($0, lead) != 1) exit
			s = substr($0, length(lead) + 1); out = ""; n = length(s)
			for (i = 1; i <= n; i++) {
				c = substr(s, i, 1)
				if (c == "\"") break
				if (c != "\\") { out = out c; continue }
				i++
				e = substr(s, i, 1)
				if (e == "u") {
					v = hexval(substr(s, i + 1, 4)); i += 4
					if (v >= 55296 && v < 56320 && substr(s, i + 1, 2) == "\\u") {
						w = hexval(substr(s, i + 3, 4))
						if (w >= 56320 && w < 57344) { v = 65536 + (v - 55296) * 1024 + (w - 56320); i += 6 }
					}
					out = out utf8(v)
				} else if (e == "n" || e == "t" || e == "r") out = out " "
				else out = out e
			}
			print out
			exit
		}'
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

# Polling: `nap` sleeps a tenth of a second, or a whole one where sleep(1) takes only integers;
# NAP_PER_SECOND says how many naps make a second.
nap_init() {
	if sleep 0.01 2>/dev/null; then
		NAP_PER_SECOND=10
	else
		NAP_PER_SECOND=1
	fi
}

nap() {
	if [ "$NAP_PER_SECOND" = 10 ]; then
		sleep 0.1
	else
		sleep 1
	fi
}

# A RUN_DIR argument -> RUN_DIR (absolute); fails the script when it is unusable, or when
# RUN_ID is given and is not the run dir's last component.
take_run_dir() {
	RUN_DIR=$(expand_workdir "$1") || fail "$E_USAGE" bad_run_dir
	if [ -n "${2-}" ]; then
		valid_run_id "$2" || fail "$E_USAGE" bad_run_id
		[ "${RUN_DIR##*/}" = "$2" ] || fail "$E_USAGE" bad_run_dir
	fi
}

# The mark prepare.sh leaves in every run dir it makes: the run id, one line.
RUN_MARK=.rtrain-run

# is_run_dir DIR RUN_ID: DIR is RUN_ID's run, made by rtrain: a directory, not a link, holding
# the mark prepare.sh left or the meta.json launch.sh wrote (runs of older versions have only
# that), naming RUN_ID.
is_run_dir() {
	[ -d "$1" ] && [ ! -L "$1" ] || return 1
	ir_mark=
	{ IFS= read -r ir_mark <"$1/$RUN_MARK"; } 2>/dev/null
	[ -n "$ir_mark" ] && [ "$ir_mark" = "$2" ] && return 0
	grep -qxF "  \"run_id\": \"$2\"," "$1/.rtrain/meta.json" 2>/dev/null ||
		grep -qxF "  \"run_id\": \"$2\"," "$1/meta.json" 2>/dev/null
}

# prove_run_dir RUN_ID: RUN_DIR (as take_run_dir set it) is RUN_ID's run (is_run_dir), or the
# script fails with not_a_run before it deletes, kills or reads a thing in it: a plain
# directory that a wrong --workdir or run id names is never touched. A RUN_DIR that is not
# there passes: each script says what that means for it.
prove_run_dir() {
	[ -e "$RUN_DIR" ] || [ -L "$RUN_DIR" ] || return 0
	is_run_dir "$RUN_DIR" "$1" && return 0
	say "$RUN_DIR is not a run of rtrain: it holds no record of run $1"
	fail "$E_NOT_A_RUN" not_a_run
}

need_args() {
	if [ "$1" -lt "$2" ]; then
		say "expected at least $2 arguments, got $1"
		fail "$E_USAGE" usage
	fi
}

# Paths inside a run dir (list_files, send). REL_PATH -> REL without "./" in front or "/"
# behind; "" names the run dir itself.
normalize_rel() {
	REL=$1
	while :; do
		case $REL in
		./*) REL=${REL#./} ;;
		*/) REL=${REL%/} ;;
		*) break ;;
		esac
	done
	[ "$REL" = . ] && REL=
	return 0
}

# REAL_RUN must hold the run dir's real path. 0: PATH's real path (REAL_PATH) is inside;
# 1: it leaves the run dir; 2: it cannot be resolved (missing parents).
inside_run() {
	REAL_PATH=$(real_path "$1" 2>/dev/null) || return 2
	[ -n "$REAL_PATH" ] || return 2
	case $REAL_PATH in
	"$REAL_RUN" | "$REAL_RUN"/*) return 0 ;;
	esac
	return 1
}

# is_digest TEXT: true for 64 lowercase hex digits, a sha256 as the hashers print it.
is_digest() {
	case $1 in
	*[!0-9a-f]*) return 1 ;;
	esac
	[ "${#1}" = 64 ]
}

# split_sums TEXT: the lines a hashing pipeline printed -> TH_DIGEST, TH_OK (how many of its
# tools said `NAME 0`) and TH_NOTE (the tools' own words, for the daemon).
split_sums() {
	TH_DIGEST='' TH_OK=0 TH_NOTE=''
	set -f
	IFS=$NL
	for th_line in $1; do
		case $th_line in
		'tee 0' | 'cat 0') TH_OK=$((TH_OK + 1)) ;;
		'tee '* | 'cat '*) ;;
		*) if is_digest "$th_line"; then TH_DIGEST=$th_line; else TH_NOTE="$TH_NOTE$th_line "; fi ;;
		esac
	done
	unset IFS
	set +f
}

# keep_part PART DEST EXPECTED_SHA256 [DIGEST]: rename PART to DEST only if its sha256 (DIGEST,
# when the caller hashed it as it wrote) matches, then answer `ok SHA SIZE` and exit 0; on a
# mismatch PART is removed, `mismatch SHA SIZE`, exit 3.
keep_part() {
	if [ -n "${4-}" ]; then
		kp_digest=$4
	elif ! kp_digest=$(sha256_of "$1"); then
		rm -f -- "$1"
		fail "$E_WRITE" write "cannot hash the received file"
	fi
	kp_size=$(size_of "$1")
	if [ "$kp_digest" != "$3" ]; then
		rm -f -- "$1"
		say "sha256 mismatch for $2: got $kp_digest, expected $3"
		emit mismatch "$kp_digest" "$kp_size"
		exit "$E_MISMATCH"
	fi
	if ! kp_msg=$(mv -f -- "$1" "$2" 2>&1); then
		rm -f -- "$1"
		fail "$E_WRITE" write "$(flat "$kp_msg")"
	fi
	emit ok "$kp_digest" "$kp_size"
	exit 0
}

# file_state FILE: one line that moves whenever the content may have: device, inode, size, mtime (to the
# nanosecond where stat(1) tells it: GNU and busybox `-c`, BSD `-f`). Without either, `ls`
# gives the same with the mtime to the minute.
file_state() {
	stat -c '%d %i %s %y' -- "$1" 2>/dev/null ||
		stat -f '%d %i %z %Fm' -- "$1" 2>/dev/null ||
		ls -lnid -- "$1"
}

# The input cache of a work directory (docs/architecture.md, "Transfers"): whole inputs by
# sha256 under inputs/, uploads on their way under partial/ (SHA, and SHA.pieces/OFF-LEN for
# each piece already verified).
cache_dirs() {
	CACHE_DIR=$1/.cache
	CACHE_INPUTS=$CACHE_DIR/inputs
	CACHE_PARTIAL=$CACHE_DIR/partial
	cd_msg=$(mkdir -p -- "$CACHE_INPUTS" "$CACHE_PARTIAL" 2>&1) || fail "$E_IO" cache "$(flat "$cd_msg")"
}

is_sha256() {
	case $1 in
	*[!0-9a-f]*) return 1 ;;
	esac
	[ "${#1}" = 64 ]
}

# place_input ENTRY RUN_DIR NAME: the cached ENTRY appears as RUN_DIR/NAME, the run's own to
# rewrite, append to or delete without changing the cache or another run: a reflink where the
# filesystem makes one (no bytes copied), else a private copy. Never a hard link: a run could
# make its link writable (it owns the file) and change the cache. `placed NAME copied`.
place_input() {
	case /$3/ in
	*/../* | */./* | //*) fail "$E_OUTSIDE" path_outside_run "$(flat "$3")" ;;
	esac
	pi_dest=$2/$3
	case $3 in
	*/*) mkdir -p -- "${pi_dest%/*}" 2>/dev/null ;;
	esac
	pi_tmp=${pi_dest%/*}/.${3##*/}.placing-$$
	# Tried once a script: a filesystem that cannot reflink one input cannot reflink the next.
	if [ "${PI_REFLINK-}" != no ] && cp --reflink=always -- "$1" "$pi_tmp" 2>/dev/null &&
		chmod u+w -- "$pi_tmp" 2>/dev/null; then
		:
	else
		[ "${PI_REFLINK-}" = no ] || rm -f -- "$pi_tmp"
		PI_REFLINK=no
		if ! cat -- "$1" >"$pi_tmp" 2>/dev/null; then
			# A new file, so it is writable (and private: umask 077).
			pi_msg=$(cat -- "$1" 2>&1 >"$pi_tmp")
			rm -f -- "$pi_tmp"
			fail "$E_WRITE" write "$(flat "${pi_msg:-copying $3 failed}")"
		fi
	fi
	pi_msg=$(mv -f -- "$pi_tmp" "$pi_dest" 2>&1) || {
		rm -f -- "$pi_tmp"
		fail "$E_WRITE" write "$(flat "$pi_msg")"
	}
	emit placed "$3" copied
}

# seal_entries: stdin names (a sha256 a line) entries just verified and moved into the cache,
# read-only; their identity is written down (cache_inputs.py, whose text the calling script
# holds in CACHE_PROGRAM), so that the next start places them without hashing them again.
seal_entries() {
	if have python3; then
		python3 -c "$CACHE_PROGRAM" seal "$CACHE_DIR" 2>/dev/null || :
	else
		cat >/dev/null
	fi
}

# run_rel RUN_DIR REL: RUN_DIR, REAL_RUN (its real path), REL (normalized) and TARGET (the
# path REL names in the run), or fail with run_not_found. Nothing is touched.
run_rel() {
	take_run_dir "$1"
	[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
	prove_run_dir "${RUN_DIR##*/}"
	REAL_RUN=$(real_path "$RUN_DIR") || fail "$E_NOT_FOUND" run_not_found
	normalize_rel "$2"
	TARGET=$RUN_DIR${REL:+/$REL}
}

# target_in_run SHOWN: TARGET exists and its real path (REAL_PATH) is inside the run, or fail
# (path_outside_run, not_found: naming SHOWN, the path as the caller gave it).
target_in_run() {
	inside_run "$TARGET"
	case $? in
	1) fail "$E_OUTSIDE" path_outside_run "$(flat "$1")" ;;
	2) fail "$E_NOT_FOUND" not_found "$(flat "$1")" ;;
	esac
	[ -e "$TARGET" ] || fail "$E_NOT_FOUND" not_found "$(flat "$1")"
}

# run_file RUN_DIR REL: set REAL_PATH to the regular file REL of the run, or fail
# (run_not_found, path_outside_run, not_found, not_a_file) without touching anything.
run_file() {
	run_rel "$1" "$2"
	target_in_run "$2"
	[ -f "$TARGET" ] || fail "$E_NOT_FOUND" not_a_file "$(flat "$2")"
}

# JSON string literals of the arguments, comma-separated. awk reads them from ARGV, which is
# not escape-processed (unlike -v), and exits before treating any of them as a file.
json_strings() {
	LC_ALL=C awk -- 'BEGIN {
		for (i = 1; i < 32; i++) esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
		esc["\t"] = "\\t"; esc["\n"] = "\\n"; esc["\r"] = "\\r"
		esc["\\"] = "\\\\"; esc["\""] = "\\\""
		out = ""
		for (a = 1; a < ARGC; a++) {
			s = ARGV[a]; t = ""; n = length(s)
			for (i = 1; i <= n; i++) {
				c = substr(s, i, 1)
				t = t ((c in esc) ? esc[c] : c)
			}
			out = out (a > 1 ? ", " : "") "\"" t "\""
		}
		print out
		exit
	}' "$@"
}

# BASE64 -> B64_VALUE (trailing newlines kept), or fail naming line_no.
decode_b64() {
	# printf is a builtin: the value travels through a pipe, never through an argv.
	# The trailing dot keeps trailing newlines of the value and proves base64 succeeded.
	B64_VALUE=$(printf '%s' "$1" | base64 -d 2>/dev/null && printf .)
	case $B64_VALUE in
	*.) B64_VALUE=${B64_VALUE%.} ;;
	*) fail "$E_BAD_SECRET" bad_secret "$line_no" "value is not base64" ;;
	esac
}

# The launch input on stdin, as the daemon writes it (contract.launch_stdin; launch.sh's
# header says every line; tests/remote/test_launch_input.py keeps the two sides equal).
# Secrets (`NAME<TAB>BASE64VALUE` lines) are validated and decoded now into secret_count
# pairs, exported only by export_secrets in the subshell that starts the run. With
# `options`, the `+` lines set env_count pairs, setup, attempt, wrapper, meta_extra and
# limits; with `secrets`, a `+` line is refused.
read_launch_input() {
	secret_count=0
	line_no=0
	if [ "$1" = options ]; then
		env_count=0
		setup=
		attempt=1
		wrapper=0
		meta_extra=
		limits=
	fi
	while IFS= read -r secret_line || [ -n "$secret_line" ]; do
		line_no=$((line_no + 1))
		if [ -z "$secret_line" ]; then
			continue
		fi
		case $secret_line in
		'+'*)
			[ "$1" = options ] || fail "$E_BAD_SECRET" bad_secret "$line_no" "unknown option line"
			launch_option "$secret_line"
			continue
			;;
		*"$TAB"*) ;;
		*) fail "$E_BAD_SECRET" bad_secret "$line_no" "expected NAME<TAB>BASE64VALUE" ;;
		esac
		secret_name=${secret_line%%"$TAB"*}
		secret_b64=${secret_line#*"$TAB"}
		secret_line=
		case $secret_name in
		'' | [!A-Za-z_]* | *[!A-Za-z0-9_]*) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad name" ;;
		RTRAIN_*) fail "$E_BAD_SECRET" bad_secret "$line_no" "RTRAIN_ names are reserved" ;;
		esac
		decode_b64 "$secret_b64"
		secret_count=$((secret_count + 1))
		eval "secret_name_$secret_count=\$secret_name secret_value_$secret_count=\$B64_VALUE"
		B64_VALUE=
		secret_b64=
	done
}

# One `+` line of the launch input (read_launch_input options).
launch_option() {
	case $1 in
	"+env$TAB"*"$TAB"*)
		opt=${1#+env"$TAB"}
		opt_name=${opt%%"$TAB"*}
		case $opt_name in
		'' | [!A-Za-z_]* | *[!A-Za-z0-9_]* | RTRAIN_RUN_ID) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad name" ;;
		esac
		decode_b64 "${opt#*"$TAB"}"
		env_count=$((env_count + 1))
		eval "env_name_$env_count=\$opt_name env_value_$env_count=\$B64_VALUE"
		;;
	"+setup$TAB"*)
		decode_b64 "${1#+setup"$TAB"}"
		setup=$B64_VALUE
		;;
	"+meta$TAB"*"$TAB"*)
		opt=${1#+meta"$TAB"}
		opt_name=${opt%%"$TAB"*}
		case $opt_name in
		'' | *[!a-z_]*) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad meta key" ;;
		esac
		decode_b64 "${opt#*"$TAB"}"
		case $B64_VALUE in
		*"$NL"*) fail "$E_BAD_SECRET" bad_secret "$line_no" "meta value is not one line" ;;
		esac
		meta_extra="$meta_extra  \"$opt_name\": $B64_VALUE,$NL"
		;;
	"+attempt$TAB"*)
		attempt=${1#+attempt"$TAB"}
		if ! { is_uint "$attempt" && [ "${#attempt}" -le 6 ] && [ "$attempt" -ge 1 ]; }; then
			fail "$E_USAGE" usage "bad attempt"
		fi
		;;
	"+limits$TAB"*"$TAB"*"$TAB"*"$TAB"*)
		opt=${1#+limits"$TAB"}
		IFS=$TAB read -r lim_max lim_stall lim_on lim_grace <<EOF
$opt
EOF
		for lim_number in "$lim_max" "$lim_stall"; do
			if ! { is_uint "$lim_number" && [ "${#lim_number}" -le 9 ]; }; then
				fail "$E_USAGE" usage "bad limits"
			fi
		done
		case $lim_on in
		flag | stop) ;;
		*) fail "$E_USAGE" usage "bad limits" ;;
		esac
		case $lim_grace in
		'' | . | *[!0-9.]* | *.*.*) fail "$E_USAGE" usage "bad limits" ;;
		esac
		if [ "$lim_max" != 0 ] || [ "$lim_stall" != 0 ]; then
			limits="$lim_max $lim_stall $lim_on $lim_grace"
		fi
		;;
	"+wrapper$TAB"*)
		wrapper=${1#+wrapper"$TAB"}
		if ! { is_uint "$wrapper" && [ "${#wrapper}" -le 3 ]; }; then
			fail "$E_USAGE" usage "bad wrapper"
		fi
		;;
	*) fail "$E_BAD_SECRET" bad_secret "$line_no" "unknown option line" ;;
	esac
}

# Secrets only (a scheduler's submit: the daemon keeps the `+` lines for the batch script).
read_secrets() {
	read_launch_input secrets
}

# Export what read_secrets decoded; call it only in the subshell that starts the run.
export_secrets() {
	es_i=1
	while [ "$es_i" -le "$secret_count" ]; do
		eval "export \"\$secret_name_$es_i=\$secret_value_$es_i\""
		es_i=$((es_i + 1))
	done
}

# in_cache SHA256 SIZE: the input is in the work directory's cache already. Starts that ship
# the same input side by side race to seal it; the first one's copy was verified like the
# others' would be, so the others place it instead of failing on a partial that moved.
in_cache() {
	[ -f "$CACHE_INPUTS/$1" ] && [ "$(size_of "$CACHE_INPUTS/$1")" = "$2" ]
}

# Many files at once (a tree's listing, a tree's stream): each tool runs once per few thousand
# paths instead of once per file. A LIST holds absolute paths, one per line (a name never holds
# a line break: the walks refuse it). Each helper prints one line per path, in LIST's order.

# each_path LIST CMD...: CMD with every path of LIST as its arguments, in as few runs as
# xargs can; fails where CMD failed for any of them or xargs cannot split on NUL.
each_path() {
	ep_list=$1
	shift
	[ -n "$ep_list" ] || return 0
	printf '%s\n' "$ep_list" | tr '\n' '\0' | xargs -0 "$@"
}

# per_path LIST FUNC: `FUNC PATH` for each path of LIST, `-` for one where it fails; the slow
# way, for a host whose batch tools fail (or a file that went away).
per_path() {
	pp_func=$2
	set -f
	IFS=$NL
	for pp_path in $1; do
		unset IFS
		"$pp_func" "$pp_path" || printf '%s\n' -
		IFS=$NL
	done
	unset IFS
	set +f
}

# sizes_of LIST: each file's size in bytes (following links).
sizes_of() {
	if so_out=$(each_path "$1" stat -L -c %s 2>/dev/null) ||
		so_out=$(each_path "$1" stat -L -f %z 2>/dev/null); then
		[ -z "$so_out" ] || printf '%s\n' "$so_out"
	else
		per_path "$1" size_of
	fi
}

# states_of LIST: each file's file_state line (following links).
states_of() {
	if so_out=$(each_path "$1" stat -L -c '%d %i %s %y' 2>/dev/null) ||
		so_out=$(each_path "$1" stat -L -f '%d %i %z %Fm' 2>/dev/null); then
		[ -z "$so_out" ] || printf '%s\n' "$so_out"
	else
		per_path "$1" file_state
	fi
}

# file_ids LIST: each file's `DEVICE:INODE` (following links); fails where a path has none.
file_ids() {
	each_path "$1" stat -L -c '%d:%i' 2>/dev/null || each_path "$1" stat -L -f '%d:%i' 2>/dev/null
}

# hashes_of LIST: each file's hex sha256, with the batch form of the hasher sha256_of picks.
hashes_of() {
	ho_out=
	if have openssl && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then
		ho_out=$(each_path "$1" openssl dgst -sha256 -r 2>/dev/null) || ho_out=
	elif have sha256sum; then
		ho_out=$(each_path "$1" sha256sum 2>/dev/null) || ho_out=
	elif have shasum; then
		ho_out=$(each_path "$1" shasum -a 256 2>/dev/null) || ho_out=
	fi
	if [ -n "$ho_out" ]; then
		# `DIGEST *PATH` or `DIGEST  PATH`; coreutils puts a backslash first when it escaped
		# the name.
		printf '%s\n' "$ho_out" | sed 's/^\\//; s/[ *].*$//'
	elif [ -n "$1" ]; then
		per_path "$1" sha256_of
	fi
}
