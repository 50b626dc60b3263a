# rtrain-needs: run_dir
# discard.sh WORKDIR RUN_ID: remove the directory of a start that never launched (cancelled or
# failed while its inputs were shipped), so its run id is free again. A directory whose
# trainer was launched (it has meta.json) is never touched.
need_args "$#" 2
valid_run_id "$2" || fail "$E_USAGE" bad_run_id
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$workdir/$2

if [ ! -e "$run_dir" ] && [ ! -L "$run_dir" ]; then
	emit discarded "$run_dir"
	exit 0
fi
RUN_DIR=$run_dir
prove_run_dir "$2"
[ -e "$run_dir/meta.json" ] && fail "$E_ALREADY_LAUNCHED" already_launched
if ! msg=$(rm -rf -- "$run_dir" 2>&1); then
	say "$msg"
	fail "$E_IO" rm "$(flat "$msg")"
fi
emit discarded "$run_dir"
exit 0
