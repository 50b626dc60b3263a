# rtrain-needs: run_dir
# prepare.sh WORKDIR RUN_ID: create the run directory; an existing one is never reused.
need_args "$#" 2
valid_run_id "$2" || fail "$E_USAGE" bad_run_id
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$workdir/$2

# shellcheck disable=SC2174 # only the workdir itself must be private
if ! msg=$(mkdir -p -m 700 -- "$workdir" 2>&1); then
	say "$msg"
	fail "$E_IO" workdir "$(flat "$msg")"
fi
# A plain mkdir is the atomic claim: it fails when the directory exists, whoever made it.
if ! msg=$(mkdir -m 700 -- "$run_dir" 2>&1); then
	if [ -e "$run_dir" ] || [ -L "$run_dir" ]; then
		say "run $2 already exists in $workdir"
		fail "$E_RUN_EXISTS" run_exists
	fi
	say "$msg"
	fail "$E_IO" mkdir "$(flat "$msg")"
fi
# The mark that makes it a run of rtrain's for every later script (prove_run_dir).
if ! msg=$( (printf '%s\n' "$2" >"$run_dir/$RUN_MARK") 2>&1); then
	rmdir -- "$run_dir" 2>/dev/null
	say "$msg"
	fail "$E_IO" mark "$(flat "$msg")"
fi
emit run_dir "$run_dir"
exit 0
