# rtrain-needs: run_meta failure own_files
# slurm_poll.sh WORKDIR RUN_ID [RUN_ID ...]: how each run's job stands, in one squeue for all
# of them, then one sacct for those squeue no longer knows. Job ids come from the runs' own
# train.jobid files, so a run is found again from its id alone. One line per run:
#   slurm RUN_ID JOB_ID SOURCE STATE REASON EXIT STATUS_FILE STOP SETUP WHY
# SOURCE is squeue, sacct or none (neither knows the job; REASON then says why) or missing
# (no such run, or it was never submitted); EXIT is sacct's ExitCode (`N:SIGNAL`) or -;
# STATUS_FILE is the run's own exit status or -; STOP is 1 when rtrain's stop asked the run to
# end; SETUP is 1 when the run's setup step failed (its trainer never started); WHY is why a
# workload with a non-zero status failed, as status.sh says it (failure_reason), or -.
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
shift
have squeue || fail "$E_SCHEDULER" no_squeue "squeue is not on PATH on the login node"

# RUN_ID JOB_ID pairs of the runs that have a job; the others are answered now.
pairs=
for run_id in "$@"; do
	shown=$(flat "$run_id")
	if ! valid_run_id "$run_id"; then
		emit slurm "${shown:--}" - missing - 'invalid run id' - - - -
		continue
	fi
	if [ ! -d "$workdir/$run_id" ]; then
		emit slurm "$run_id" - missing - 'no run directory' - - - -
		continue
	fi
	job_id=
	own_dir "$workdir/$run_id"
	{ IFS= read -r job_id <"$BOOK/train.jobid"; } 2>/dev/null
	if ! is_uint "$job_id"; then
		emit slurm "$run_id" - missing - 'never submitted' - - - -
		continue
	fi
	pairs="$pairs $run_id $job_id"
done
[ -n "$pairs" ] || exit 0
# shellcheck disable=SC2086 # pairs of plain words, validated above
set -- $pairs

# One squeue for every job of this poll; an unknown id makes squeue fail for all of them, so
# it asks for the user's jobs in every state and picks ours out.
queue=$(squeue -h -u "$(id -un)" -t all -o '%i|%T|%r' 2>&1)
queue_code=$?
missing=
for_each_run() {
	while [ "$#" -gt 0 ]; do
		"$poll_step" "$1" "$2"
		shift 2
	done
}

# shellcheck disable=SC2317 # called through $poll_step
status_of() {
	sf=- stop=- setup=-
	own_dir "$workdir/$1"
	[ -e "$BOOK/stop_requested" ] && stop=1
	[ -e "$BOOK/setup_failed" ] && setup=1
	if [ -f "$OWN/status" ]; then
		{ IFS= read -r sf <"$OWN/status"; } 2>/dev/null
		is_uint "$sf" || sf=-
	fi
	why=-
	if [ "$sf" != - ] && [ "${#sf}" -le 3 ] && [ "$sf" -gt 0 ] && [ "$setup" != 1 ]; then
		RS_DETAIL=-
		read_meta "$workdir/$1"
		failure_reason "$workdir/$1" "$sf"
		why=$RS_DETAIL
	fi
}

# shellcheck disable=SC2317 # called through $poll_step
from_queue() {
	line=$(printf '%s\n' "$queue" | grep -E "^$2\\|" | head -n 1)
	if [ "$queue_code" = 0 ] && [ -n "$line" ]; then
		rest=${line#*|}
		state=${rest%%|*}
		reason=${rest#*|}
		status_of "$1"
		emit slurm "$1" "$2" squeue "$state" "$(flat "$reason")" - "$sf" "$stop" "$setup" "$why"
	else
		missing="$missing $1 $2"
	fi
}
poll_step=from_queue
for_each_run "$@"

[ -n "$missing" ] || exit 0
# shellcheck disable=SC2086 # pairs of plain words, validated above
set -- $missing
ids=
while [ "$#" -gt 0 ]; do
	ids="${ids:+$ids,}$2"
	shift 2
done
# shellcheck disable=SC2086
set -- $missing
accounting=
if have sacct; then
	accounting=$(sacct -n -P -X -j "$ids" -o JobID,State,ExitCode,Reason 2>&1)
	accounting_code=$?
else
	accounting_code=127
	accounting='sacct is not on PATH'
fi
# shellcheck disable=SC2317 # called through $poll_step
from_accounting() {
	status_of "$1"
	line=
	if [ "$accounting_code" = 0 ]; then
		line=$(printf '%s\n' "$accounting" | grep -E "^$2\\|" | tail -n 1)
	fi
	if [ -n "$line" ]; then
		rest=${line#*|}
		state=${rest%%|*}
		rest=${rest#*|}
		exit_code=${rest%%|*}
		reason=${rest#*|}
		emit slurm "$1" "$2" sacct "$state" "$(flat "$reason")" "$exit_code" "$sf" "$stop" "$setup" "$why"
	elif [ "$accounting_code" = 0 ]; then
		emit slurm "$1" "$2" none - 'neither squeue nor sacct knows the job' - "$sf" "$stop" "$setup" "$why"
	else
		emit slurm "$1" "$2" none - "$(flat "accounting unavailable: $accounting")" - "$sf" "$stop" "$setup" "$why"
	fi
}
poll_step=from_accounting
for_each_run "$@"
exit 0
