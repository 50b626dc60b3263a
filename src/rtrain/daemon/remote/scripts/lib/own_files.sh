# Where rtrain keeps a run's own files (its state, its reasons), by the run's layout.
OWN='' BOOK=''

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
