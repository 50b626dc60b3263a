# rtrain-needs: run_dir nap own_files
# slurm_cancel.sh RUN_DIR RUN_ID GRACE_S: take the run's job (train.jobid) off the cluster.
# A pending job
# is cancelled; a running one gets SIGTERM (its batch shell and every step), GRACE_S seconds
# to end, then scancel (KILL). Waits until Slurm says the job is over and prints
#   stop STATE     (the job's last state: CANCELLED, COMPLETED, FAILED, ... or COMPLETING)
need_args "$#" 3
take_run_dir "$1" "$2"
grace=$3
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
prove_run_dir "$2"
job_id=
own_dir "$RUN_DIR"
{ IFS= read -r job_id <"$BOOK/train.jobid"; } 2>/dev/null
is_uint "$job_id" || fail "$E_NOT_FOUND" never_submitted
is_uint "$grace" || fail "$E_USAGE" bad_grace
have scancel || fail "$E_SCHEDULER" no_scancel "scancel is not on PATH on the login node"

job_state() {
	js=$(squeue -h -j "$job_id" -t all -o '%T' 2>/dev/null | head -n 1)
	if [ -z "$js" ] && have sacct; then
		js=$(sacct -n -P -X -j "$job_id" -o State 2>/dev/null | head -n 1)
		js=${js%% *}
	fi
	printf '%s' "$js"
}

over() {
	case $1 in
	PENDING | CONFIGURING | RUNNING | SUSPENDED | COMPLETING | REQUEUED | RESIZING | STOPPED | SIGNALING | STAGE_OUT) return 1 ;;
	'') return 1 ;;
	*) return 0 ;;
	esac
}

: >"$BOOK/stop_requested" 2>/dev/null
state=$(job_state)
nap_init
if [ "$state" = RUNNING ] || [ "$state" = CONFIGURING ]; then
	scancel --signal=TERM --full "$job_id" 2>/dev/null
	waited=0
	while [ "$waited" -lt "$((grace * NAP_PER_SECOND))" ]; do
		state=$(job_state)
		over "$state" && break
		[ "$state" = COMPLETING ] && break
		nap
		waited=$((waited + 1))
	done
fi
over "$state" || scancel "$job_id" 2>/dev/null
# Slurm's own KillWait and epilog come on top of the grace period.
waited=0
while [ "$waited" -lt "$((60 * NAP_PER_SECOND))" ]; do
	state=$(job_state)
	if over "$state"; then
		emit stop "$state"
		exit 0
	fi
	nap
	waited=$((waited + 1))
done
emit stop "${state:-UNKNOWN}"
fail "$E_SURVIVED" survived "the job is still $state after scancel"
