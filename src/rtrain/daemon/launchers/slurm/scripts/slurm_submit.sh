# rtrain-needs: run_dir launch_input own_files
# slurm_submit.sh RUN_DIR RUN_ID ATTEMPT META_LINES BATCH_SCRIPT SBATCH_ARG...: write
# BATCH_SCRIPT into the run dir as rtrain.sbatch (kept, so a person can read what ran), submit
# it with `sbatch --parsable`, and record the job id in train.jobid and meta.json (with
# META_LINES, the daemon's `  "key": JSON,` lines: command, python, inputs...). ATTEMPT > 1 is
# a restart of a run whose job has ended. Secrets come on stdin as `NAME<TAB>BASE64VALUE`
# lines; they are exported to sbatch only, which hands its environment to the job, so they
# never reach a command line or a file of the run.
need_args "$#" 5
take_run_dir "$1" "$2"
run_id=$2
attempt=$3
meta_lines=$4
batch_text=$5
shift 5
{ is_uint "$attempt" && [ "$attempt" -ge 1 ]; } || fail "$E_USAGE" usage "bad attempt"

[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" no_run_dir
prove_run_dir "$run_id"
have sbatch || fail "$E_SCHEDULER" no_sbatch "sbatch is not on PATH on the login node"
if [ "$attempt" = 1 ]; then
	# Claim the submission atomically (O_EXCL): a second submit of the same run is refused.
	if ! (set -C && : >"$RUN_DIR/meta.json") 2>/dev/null; then
		fail "$E_ALREADY_LAUNCHED" already_launched
	fi
else
	# A restart: attempt N is claimed atomically too, then the last attempt's leftovers go
	# (the daemon recorded its outcome and checked that its job has ended).
	own_dir "$RUN_DIR"
	[ -f "$BOOK/meta.json" ] || fail "$E_NOT_FOUND" never_launched
	if ! (set -C && : >"$BOOK/attempt-$attempt") 2>/dev/null; then
		fail "$E_ALREADY_LAUNCHED" already_launched
	fi
	# The last attempt's files, where it wrote them (an older rtrain: beside the trainer's).
	rm -f -- "$OWN/status" "$OWN/status.tmp" "$BOOK/stop_requested" "$BOOK/setup_failed" \
		"$BOOK/train.jobid"
	printf '==> rtrain: attempt %s of %s submitted at %s <==\n' "$attempt" "$run_id" \
		"$(date -u '+%Y-%m-%d %H:%M:%S UTC')" >>"$RUN_DIR/train.log"
fi

read_secrets
# From this submission on, rtrain's files are in .rtrain/, which the trainer's never reach.
[ -d "$RUN_DIR/.rtrain" ] || mkdir -m 700 "$RUN_DIR/.rtrain" ||
	fail "$E_IO" mkdir "cannot create .rtrain in the run directory"

{ printf '%s' "$batch_text" >"$RUN_DIR/rtrain.sbatch.tmp" &&
	mv -f -- "$RUN_DIR/rtrain.sbatch.tmp" "$RUN_DIR/rtrain.sbatch"; } ||
	fail "$E_IO" batch_script "cannot write rtrain.sbatch"

cd "$RUN_DIR" || fail "$E_IO" cd "cannot enter the run directory"
submitted_at=$(date +%s)
answer=$(
	export_secrets
	RTRAIN_RUN_ID=$run_id
	export RTRAIN_RUN_ID
	sbatch --parsable "$@" rtrain.sbatch 2>&1 </dev/null
)
code=$?
# --parsable prints `JOBID` or `JOBID;CLUSTER`.
job_id=${answer%%;*}
if [ "$code" != 0 ] || ! is_uint "$job_id"; then
	if [ "$attempt" = 1 ]; then
		rm -f -- "$RUN_DIR/meta.json"
	else
		rm -f -- "$BOOK/attempt-$attempt"
	fi
	fail "$E_SCHEDULER" sbatch_refused "$(flat "$answer")"
fi
printf '%s\n' "$job_id" >.rtrain/train.jobid.tmp && mv -f .rtrain/train.jobid.tmp .rtrain/train.jobid
{
	printf '{\n'
	printf '  "run_id": %s,\n' "$(json_strings "$run_id")"
	printf '  "started_at": %s,\n' "$submitted_at"
	printf '  "job_id": %s,\n' "$job_id"
	printf '%s' "$meta_lines"
	printf '  "hostname": %s\n' "$(json_strings "$(uname -n 2>/dev/null)")"
	printf '}\n'
} >.rtrain/meta.json.tmp || fail "$E_IO" meta "cannot write meta.json"
# rtrain's record is .rtrain/meta.json; the one beside the trainer's files is a copy for
# people (a restart leaves a trainer's own meta.json in place).
if [ "$attempt" = 1 ] || grep -qxF "  \"run_id\": $(json_strings "$run_id")," meta.json 2>/dev/null; then
	{ cp -f -- .rtrain/meta.json.tmp meta.json.tmp && mv -f -- meta.json.tmp meta.json; } ||
		fail "$E_IO" meta "cannot write meta.json"
fi
mv -f -- .rtrain/meta.json.tmp .rtrain/meta.json || fail "$E_IO" meta "cannot write meta.json"
emit job "$job_id"
emit started_at "$submitted_at"
exit 0
