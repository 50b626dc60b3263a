# rtrain-needs: run_dir cache
# prepare.sh WORKDIR RUN_ID [place]: create the run directory; an existing one is never
# reused. With `place`, stdin holds cache_place.sh's list, and once the directory is claimed
# the inputs the work directory's cache holds are placed in it, as cache_place.sh would
# (its lines follow `run_dir`): a warm start's claim and placement in one round trip.
placing=
if [ "$#" = 3 ] && [ "$3" = place ]; then
	placing=1
	set -- "$1" "$2"
fi
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
[ -n "$placing" ] || exit 0
cache_dirs "$workdir"
# daemon/remote/cache_inputs.py: the daemon puts its text in place of the word below.
CACHE_PROGRAM='@cache_inputs.py@'
place_listed "$run_dir"
