# A run directory named by the daemon, and the proof that it is one of rtrain's runs.

# The mark prepare.sh leaves in every run dir it makes: the run id, one line.
RUN_MARK=.rtrain-run

# A RUN_DIR argument -> RUN_DIR (absolute); fails the script when it is unusable, or when
# RUN_ID is given and is not the run dir's last component.
take_run_dir() {
	RUN_DIR=$(expand_workdir "$1") || fail "$E_USAGE" bad_run_dir
	if [ -n "${2-}" ]; then
		valid_run_id "$2" || fail "$E_USAGE" bad_run_id
		[ "${RUN_DIR##*/}" = "$2" ] || fail "$E_USAGE" bad_run_dir
	fi
}

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
