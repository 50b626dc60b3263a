# rtrain-needs: run_dir launch_input processes nap failure run_state own_files
# launch.sh RUN_DIR RUN_ID PYTHON CMD...: start CMD detached in the run dir and return its
# session leader's pid. Secrets come on stdin as `NAME<TAB>BASE64VALUE` lines; they reach the
# trainer's environment only, never a command line or a file. Lines starting with `+` carry
# the rest of the launch (a `+` cannot start a secret's name), each value base64:
#   +env<TAB>NAME<TAB>VALUE   a variable for the setup step and the trainer (also in meta.json)
#   +setup<TAB>COMMAND        a shell command run in the run dir before the trainer
#   +meta<TAB>KEY<TAB>JSON    one more key of meta.json, its value one line of JSON
#   +attempt<TAB>N            (plain digits) attempt N >= 2 of a run that ended: a restart
#   +wrapper<TAB>N            (plain digits) CMD's first N words are rtrain's own wrapper (the
#                             GPU gate); the trainer's program is word N+1
#   +limits<TAB>MAX<TAB>STALL<TAB>ON_STALL<TAB>GRACE
#                             the attempt's limits (limits.sh: seconds, 0 for none; flag|stop;
#                             the stop's grace), watched on the host by `rtrain-limits`, which
#                             the daemon ships into the run dir with `rtrain-stop`
# launch.sh --ahead RUN_ID: opened on a channel of its own beside the start's claim, before the
# run directory exists, so that the channel's set-up overlaps the claim and the shipping. It looks
# up its tools, then waits on stdin for `+args<TAB>N` and N lines (the arguments above, each
# `=WORD`, or `bBASE64` for a word with a line break; RUN_ID must be the run's), then the
# launch input above, ended by a `+go` line, then at most one long `+meta` value as
# `KEY<TAB>BASE64` and an `+end` line. A stdin that ends before `+go`, or has a value after it
# but no `+end` (a start that failed while shipping, a daemon gone), launches nothing:
# `stood_down`.

# Absolute tool paths, looked up before any secret can change PATH (and, with --ahead, while
# the start is still claiming and shipping).
mv_bin=$(command -v mv) || fail "$E_NO_DETACH" no_mv
env_bin=$(command -v env 2>/dev/null) || env_bin=
env_reset=
if [ -n "$env_bin" ] && "$env_bin" --default-signal=INT true >/dev/null 2>&1; then
	env_reset=1
fi
setsid_bin=$(command -v setsid 2>/dev/null) || setsid_bin=
setsid_fork=
if [ -n "$setsid_bin" ] && "$setsid_bin" --help 2>&1 | grep -q -e --fork; then
	setsid_fork=1
fi

# Nothing is launched without the daemon's go (--ahead).
stand_down() {
	emit stood_down
	exit 0
}
ahead=
if [ "$#" = 2 ] && [ "$1" = --ahead ]; then
	ahead=$2
	line_no=1
	IFS= read -r ahead_line || stand_down
	case $ahead_line in
	"+args$TAB"*) ahead_count=${ahead_line#+args"$TAB"} ;;
	*) fail "$E_USAGE" usage "expected +args" ;;
	esac
	{ is_uint "$ahead_count" && [ "${#ahead_count}" -le 4 ]; } || fail "$E_USAGE" usage "bad +args"
	set --
	while [ "$#" -lt "$ahead_count" ]; do
		line_no=$((line_no + 1))
		IFS= read -r ahead_line || stand_down
		case $ahead_line in
		=*) set -- "$@" "${ahead_line#=}" ;;
		b*)
			decode_b64 "${ahead_line#b}"
			set -- "$@" "$B64_VALUE"
			;;
		*) fail "$E_USAGE" usage "bad argument line" ;;
		esac
	done
	ahead_line=
	[ "$#" -lt 2 ] || [ "$2" = "$ahead" ] || fail "$E_USAGE" usage "another run's launch"
fi
need_args "$#" 4
take_run_dir "$1" "$2"
run_id=$2
python_arg=$3
shift 3

[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" no_run_dir
prove_run_dir "$run_id"

# The session leader: records its pid, runs the trainer as its child, passes TERM/INT/HUP on
# (unless stop.sh sent them), keeps waiting until the child has really ended, then records
# the exit status. Both files appear whole (tmp + mv) or not at all, and private; the trainer
# gets the caller's umask. It is the file `rtrain-run` in the run dir, so `ps` shows a short
# line (`/bin/sh ./rtrain-run RUN_ID ...`), not this whole text. Its arguments: RUN_ID (for
# `ps` alone; the marker is RTRAIN_RUN_ID in its environment) MV_PATH UMASK CMD...
# shellcheck disable=SC2016 # a script of its own: it expands its own words when it runs
WRAPPER='mv_bin=$2
trainer_umask=$3
shift 3
child=
signalled=0
forward() {
	signalled=1
	# stop.sh writes .rtrain/stop_requested before it signals the whole run itself; passing
	# its signal on as well would hit the trainer twice, possibly in its cleanup.
	if [ -n "$child" ] && [ ! -e .rtrain/stop_requested ]; then
		kill -s "$1" "$child" 2>/dev/null
	fi
}
trap "forward TERM" TERM
trap "forward INT" INT
trap "forward HUP" HUP
# The OOM kills the kernel counted in this cgroup (v2 memory.events, v1 memory.oom_control;
# 0 where neither is readable): one more at the end says the OOM killer took a process of
# the run, and the status scripts say "out of memory?" for a death by SIGKILL.
oom_kills() {
	ok_v2= ok_v1=
	if [ -r /proc/self/cgroup ]; then
		while IFS= read -r ok_line; do
			case $ok_line in
			0::*) ok_v2=${ok_line#0::} ;;
			*:memory:*) ok_v1=${ok_line#*:memory:} ;;
			esac
		done </proc/self/cgroup
	fi
	ok_count=0
	for ok_file in "/sys/fs/cgroup${ok_v2%/}/memory.events" "/sys/fs/cgroup/memory${ok_v1%/}/memory.oom_control" /sys/fs/cgroup/memory/memory.oom_control; do
		[ -r "$ok_file" ] || continue
		while read -r ok_key ok_value; do
			[ "$ok_key" = oom_kill ] && ok_count=$ok_value
		done <"$ok_file"
		break
	done
	printf "%s\n" "$ok_count"
}
oom_before=$(oom_kills)
printf "%s\n" "$$" >.rtrain/train.pid.tmp && "$mv_bin" -f .rtrain/train.pid.tmp .rtrain/train.pid || exit 125
# status.tmp holds a block from the start, so the exit status still lands when the trainer
# filled the disk: rewriting the file reuses the block its truncation frees.
printf "%s\n" - >.rtrain/status.tmp 2>/dev/null
(umask "$trainer_umask" && exec "$@") </dev/null &
child=$!
# The trainer keeps train.log; the shell'"'"'s own job reports ("Terminated") stay out of it.
exec 2>/dev/null
while :; do
	signalled=0
	wait "$child"
	code=$?
	if [ "$signalled" = 0 ] || [ "$code" -le 128 ]; then
		break
	fi
	# A trapped signal either cut wait short (the child still exists) or came just after
	# the child ended; a second wait tells them apart.
	if kill -0 "$child" 2>/dev/null; then
		continue
	fi
	wait "$child" 2>/dev/null
	again=$?
	[ "$again" = 127 ] || code=$again
	break
done
oom_after=$(oom_kills)
case $oom_before$oom_after in
*[!0-9]*) ;;
*) [ "$oom_after" -gt "$oom_before" ] && : >.rtrain/oom_killed ;;
esac
tries=0
until printf "%s\n" "$code" >.rtrain/status.tmp; do
	# A journaling file system hands a freed block out again only once it commits.
	tries=$((tries + 1))
	[ "$tries" -lt 15 ] || exit "$code"
	sleep 1
done
"$mv_bin" -f .rtrain/status.tmp .rtrain/status
exit "$code"
'

# The run's first steps, in the trainer's own process (it execs the trainer at the end): the
# setup command, then a look for the trainer's program, so a typo reads as one sentence in
# the log. Each failure leaves a file the status scripts read. Its arguments: SETUP N CMD...,
# where CMD's first N words are rtrain's wrapper and the trainer's program comes after (N is
# 0 where the wrapper runs these steps, as the GPU gate does).
# shellcheck disable=SC2016 # a script of its own: it expands its own words when it runs
STEPS='setup=$1
wrapper=$2
shift 2
if [ -n "$setup" ]; then
	/bin/sh -c "$setup" </dev/null
	code=$?
	if [ "$code" != 0 ]; then
		: >.rtrain/setup_failed
		printf "rtrain: the setup command failed (exit %s); the trainer was not started\n" "$code"
		exit "$code"
	fi
fi
eval "program=\${$((wrapper + 1))}"
if ! command -v "$program" >/dev/null 2>&1; then
	: >.rtrain/program_missing
	printf "rtrain: cannot start the trainer: %s is not a program on this host (not on PATH, nor an executable file)\n" "$program"
	exit 127
fi
exec "$@"
'

# Puts signal dispositions back to default, then (mode `setsid`) forks into a new session, and
# execs its arguments. Used where setsid(1) or env --default-signal are missing.
TRAMPOLINE='import os, signal, sys
for name in ("SIGINT", "SIGQUIT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
if sys.argv[1] == "setsid":
    if os.fork():
        os._exit(0)
    os.setsid()
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    sys.stderr.write("rtrain: cannot run %s: %s\n" % (sys.argv[2], error.strerror))
    os._exit(127)
'

# Secrets: validated and decoded now, exported only in the subshell that starts the run;
# the `+` lines set the rest of the launch (lib/launch_input.sh's read_launch_input).
read_launch_input options
if [ -n "$ahead" ]; then
	[ -n "$launch_go" ] || stand_down
	# After the go, at most one long `+meta` value (a code tree's inputs) as `KEY<TAB>BASE64`,
	# then `+end`: taken by one cat, where `read` takes a byte per system call.
	ahead_tail=$(cat)
	if [ -n "$ahead_tail" ]; then
		case $ahead_tail in
		*"$NL+end") ahead_tail=${ahead_tail%"$NL+end"} ;;
		*) stand_down ;;
		esac
		line_no='after +go'
		launch_option "+meta$TAB$ahead_tail"
		ahead_tail=
	fi
fi

case $python_arg in
'~'*) python_cmd=$(expand_workdir "$python_arg") || python_cmd=$python_arg ;;
/*) python_cmd=$python_arg ;;
*/*) python_cmd=$(expand_workdir "$python_arg") ;;
*) python_cmd=$python_arg ;;
esac
python_bin=$(command -v "$python_cmd" 2>/dev/null) || python_bin=
python_ok=
# PYTHON is needed only where the tools above fall short.
if [ -z "$setsid_fork" ] || [ -z "$env_reset" ]; then
	if [ -n "$python_bin" ] && "$python_bin" -c 'import os' >/dev/null 2>&1; then
		python_ok=1
	fi
fi
if [ -n "$setsid_fork" ]; then
	detach=setsid_fork
elif [ -n "$python_ok" ]; then
	detach=python
elif [ -n "$setsid_bin" ]; then
	detach=setsid_background
else
	say "neither setsid nor a working $python_arg: cannot detach the run"
	fail "$E_NO_DETACH" no_setsid
fi

if [ "$attempt" = 1 ]; then
	# Claim the launch atomically (O_EXCL): a second launch of the same run is refused.
	[ -e "$RUN_DIR/train.pid" ] || [ -e "$RUN_DIR/.rtrain/train.pid" ] &&
		fail "$E_ALREADY_LAUNCHED" already_launched
	if ! (set -C && : >"$RUN_DIR/meta.json") 2>/dev/null; then
		fail "$E_ALREADY_LAUNCHED" already_launched
	fi
else
	# A restart: the run was launched and has ended. Attempt N is claimed atomically too,
	# then the last attempt's leftovers go (the daemon recorded its outcome).
	own_dir "$RUN_DIR"
	[ -f "$BOOK/meta.json" ] || fail "$E_NOT_FOUND" never_launched
	run_state "$RUN_DIR" "$run_id"
	[ "$RS_STATE" = running ] && fail "$E_REFUSED" running
	own_dir "$RUN_DIR"
	if ! (set -C && : >"$BOOK/attempt-$attempt") 2>/dev/null; then
		fail "$E_ALREADY_LAUNCHED" already_launched
	fi
	# The state's own files are in .rtrain/; in the run dir itself only for a run an older
	# rtrain launched (where the names are rtrain's, not the trainer's: from this attempt
	# on they are in .rtrain/).
	rm -f -- "$OWN/status" "$OWN/status.tmp" "$OWN/train.pid" "$OWN/rank0"
	for name in stop_requested setup_failed program_missing stalled limit_stop rank_failure \
		oom_killed env_failed queued; do
		rm -f -- "$BOOK/$name"
	done
fi
# From this attempt on, the files that decide the run's state are rtrain's alone.
[ -d "$RUN_DIR/.rtrain" ] || mkdir -m 700 "$RUN_DIR/.rtrain" ||
	fail "$E_IO" mkdir "cannot create .rtrain in the run directory"
started_at=$(date +%s)
{
	printf '{\n'
	printf '  "run_id": %s,\n' "$(json_strings "$run_id")"
	printf '  "started_at": %s,\n' "$started_at"
	printf '  "attempt": %s,\n' "$attempt"
	printf '%s' "$meta_extra"
	printf '  "boot_id": %s,\n' "$(json_strings "$(boot_id)")"
	printf '  "hostname": %s,\n' "$(json_strings "$(uname -n 2>/dev/null)")"
	printf '  "python": %s,\n' "$(json_strings "$python_arg")"
	printf '  "command": [%s]\n' "$(json_strings "$@")"
	printf '}\n'
} >"$RUN_DIR/.rtrain/meta.json.tmp" || fail "$E_IO" meta "cannot write meta.json"
# rtrain's record is .rtrain/meta.json (a trainer's own meta.json changes nothing); the copy
# beside the trainer's files is for people, and a restart leaves a trainer's own in place.
if [ "$attempt" = 1 ] || grep -qxF "  \"run_id\": $(json_strings "$run_id")," "$RUN_DIR/meta.json" 2>/dev/null; then
	{ cp -f -- "$RUN_DIR/.rtrain/meta.json.tmp" "$RUN_DIR/meta.json.tmp" &&
		mv -f -- "$RUN_DIR/meta.json.tmp" "$RUN_DIR/meta.json"; } ||
		fail "$E_IO" meta "cannot write meta.json"
fi
mv -f -- "$RUN_DIR/.rtrain/meta.json.tmp" "$RUN_DIR/.rtrain/meta.json" ||
	fail "$E_IO" meta "cannot write meta.json"

# A `~/...` program (`--python ~/venv/bin/python`) means the far user's home, as it does
# for preflight; so does each later word that is that python exactly (torchrun under the
# relay runs it twice: the relay, then torchrun). Nothing else of the command is touched.
[ "$wrapper" -lt "$#" ] || fail "$E_USAGE" usage "no command after the wrapper"
word_no=0
for word in "$@"; do
	if [ "$word_no" = "$wrapper" ] || { [ "$word_no" -gt "$wrapper" ] && [ "$word" = "$python_arg" ]; }; then
		# shellcheck disable=SC2088 # the word as typed: expand_workdir expands it
		case $word in
		'~' | '~/'*) expanded=$(expand_workdir "$word") && word=$expanded ;;
		esac
	fi
	word_no=$((word_no + 1))
	set -- "$@" "$word"
done
shift "$word_no"
# A file, as rtrain-run below is: the run's processes read short in `ps`.
printf '%s' "$STEPS" >"$RUN_DIR/rtrain-steps" || fail "$E_IO" steps "cannot write rtrain-steps"
# The wrapper (the GPU gate) goes first and runs the steps: a run's GPUs are claimed when it
# is launched, before its setup, so a long setup (a pip install) cannot lose them to a run
# accepted after it; a run that must wait for GPUs waits before its setup.
word_no=0
for word in "$@"; do
	[ "$word_no" = "$wrapper" ] && set -- "$@" /bin/sh ./rtrain-steps "$setup" 0
	word_no=$((word_no + 1))
	set -- "$@" "$word"
done
shift "$word_no"
if [ "$attempt" != 1 ]; then
	printf '==> rtrain: attempt %s of %s started at %s <==\n' "$attempt" "$run_id" \
		"$(date -u '+%Y-%m-%d %H:%M:%S UTC')" >>"$RUN_DIR/train.log"
fi

# A shell without job control starts background jobs with SIGINT and SIGQUIT ignored (dash
# cannot undo that with trap); the trainer gets them back through env or the trampoline.
if [ -n "$env_reset" ]; then
	set -- "$env_bin" --default-signal=INT,QUIT "$@"
elif [ -n "$python_ok" ]; then
	set -- "$python_bin" -c "$TRAMPOLINE" exec "$@"
fi
printf '%s' "$WRAPPER" >"$RUN_DIR/rtrain-run" || fail "$E_IO" wrapper "cannot write rtrain-run"
set -- /bin/sh ./rtrain-run "$run_id" "$mv_bin" "$CALLER_UMASK" "$@"
if [ -n "$env_reset" ]; then
	set -- "$env_bin" --default-signal=INT,QUIT,TERM,HUP "$@"
fi

cd "$RUN_DIR" || fail "$E_IO" cd "cannot enter the run directory"
# Every descriptor of the run points away from the caller's (the ssh channel), so this
# script returns at once. Secrets are exported only inside this subshell.
if ! (
	i=1
	while [ "$i" -le "$env_count" ]; do
		eval "export \"\$env_name_$i=\$env_value_$i\""
		i=$((i + 1))
	done
	i=1
	while [ "$i" -le "$secret_count" ]; do
		eval "export \"\$secret_name_$i=\$secret_value_$i\""
		i=$((i + 1))
	done
	RTRAIN_RUN_ID=$run_id
	PYTHONUNBUFFERED=1
	export RTRAIN_RUN_ID PYTHONUNBUFFERED
	case $detach in
	setsid_fork) exec "$setsid_bin" -f "$@" ;;
	python) exec "$python_bin" -c "$TRAMPOLINE" setsid "$@" ;;
	# Not a process group leader, so setsid(1) detaches without forking.
	setsid_background) "$setsid_bin" "$@" & ;;
	esac
) </dev/null >>train.log 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; then
	say "could not start the run (see train.log)"
	fail "$E_NO_DETACH" detach_failed
fi

# The attempt's limits, watched on the host (limits.sh) by a process of its own: detached as
# the run is, but without its marker or its secrets, so it is never taken for part of it.
start_limits() {
	[ -n "$limits" ] || return 0
	if [ ! -f "$RUN_DIR/rtrain-limits" ] || [ ! -f "$RUN_DIR/rtrain-stop" ]; then
		say "the run's limits are not watched: rtrain-limits or rtrain-stop is missing"
		return 0
	fi
	# shellcheck disable=SC2086 # validated numbers and words, split on purpose
	set -- /bin/sh ./rtrain-limits "$RUN_DIR" "$run_id" "$attempt" $limits
	(
		unset RTRAIN_RUN_ID
		case $detach in
		setsid_fork) exec "$setsid_bin" -f "$@" ;;
		python) exec "$python_bin" -c "$TRAMPOLINE" setsid "$@" ;;
		setsid_background) "$setsid_bin" "$@" & ;;
		esac
	) </dev/null >/dev/null 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- ||
		say "the run's limits are not watched: their watcher did not start"
}

nap_init
waited=0
while [ "$waited" -lt "$((10 * NAP_PER_SECOND))" ]; do
	read_pid_file "$RUN_DIR"
	if [ -n "$PF_PID" ] && { pid_alive "$PF_PID" || [ -f "$OWN/status" ]; }; then
		start_limits
		emit pid "$PF_PID"
		emit started_at "$started_at"
		exit 0
	fi
	nap
	waited=$((waited + 1))
done
say "the run did not record its pid within 10 s (see train.log)"
fail "$E_LAUNCH_TIMEOUT" launch_timeout
