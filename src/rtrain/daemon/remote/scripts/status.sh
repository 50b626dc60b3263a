# rtrain-needs: failure run_state
# status.sh WORKDIR RUN_ID [RUN_ID ...]: one `run` line per run id, in the order given:
# `run RUN_ID STATE EXIT SIGNAL STARTED DETAIL STALLED FAILED_AT RANK0` (STALLED: seconds a
# running run has been still, see limits.sh; `-` when it is not; FAILED_AT: when a failed
# torchrun run's first failing rank failed, epoch seconds, `-` when not known; RANK0: `1`
# when global rank 0 of a torchrun run ran on this host, so its metrics are in this log).
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
shift
for run_id in "$@"; do
	if ! valid_run_id "$run_id"; then
		shown=$(flat "$run_id")
		emit run "${shown:--}" missing - - - 'invalid run id'
		continue
	fi
	run_state "$workdir/$run_id" "$run_id"
	emit run "$run_id" "$RS_STATE" "$RS_EXIT" "$RS_SIGNAL" "$RS_STARTED" "$RS_DETAIL" "$RS_STALLED" "$RS_FAILED_AT" "$RS_RANK0"
done
exit 0
