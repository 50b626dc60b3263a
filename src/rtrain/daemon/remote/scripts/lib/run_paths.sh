# rtrain-needs: run_dir
# Paths inside a run directory, never leaving it.
REAL_RUN='' REAL_PATH='' REL='' TARGET=''

# Paths inside a run dir (list_files, send). REL_PATH -> REL without "./" in front or "/"
# behind; "" names the run dir itself.
normalize_rel() {
	REL=$1
	while :; do
		case $REL in
		./*) REL=${REL#./} ;;
		*/) REL=${REL%/} ;;
		*) break ;;
		esac
	done
	[ "$REL" = . ] && REL=
	return 0
}

# REAL_RUN must hold the run dir's real path. 0: PATH's real path (REAL_PATH) is inside;
# 1: it leaves the run dir; 2: it cannot be resolved (missing parents).
inside_run() {
	REAL_PATH=$(real_path "$1" 2>/dev/null) || return 2
	[ -n "$REAL_PATH" ] || return 2
	case $REAL_PATH in
	"$REAL_RUN" | "$REAL_RUN"/*) return 0 ;;
	esac
	return 1
}

# run_rel RUN_DIR REL: RUN_DIR, REAL_RUN (its real path), REL (normalized) and TARGET (the
# path REL names in the run), or fail with run_not_found. Nothing is touched.
run_rel() {
	take_run_dir "$1"
	[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
	prove_run_dir "${RUN_DIR##*/}"
	REAL_RUN=$(real_path "$RUN_DIR") || fail "$E_NOT_FOUND" run_not_found
	normalize_rel "$2"
	TARGET=$RUN_DIR${REL:+/$REL}
}

# target_in_run SHOWN: TARGET exists and its real path (REAL_PATH) is inside the run, or fail
# (path_outside_run, not_found: naming SHOWN, the path as the caller gave it).
target_in_run() {
	inside_run "$TARGET"
	case $? in
	1) fail "$E_OUTSIDE" path_outside_run "$(flat "$1")" ;;
	2) fail "$E_NOT_FOUND" not_found "$(flat "$1")" ;;
	esac
	[ -e "$TARGET" ] || fail "$E_NOT_FOUND" not_found "$(flat "$1")"
}

# run_file RUN_DIR REL: set REAL_PATH to the regular file REL of the run, or fail
# (run_not_found, path_outside_run, not_found, not_a_file) without touching anything.
run_file() {
	run_rel "$1" "$2"
	target_in_run "$2"
	[ -f "$TARGET" ] || fail "$E_NOT_FOUND" not_a_file "$(flat "$2")"
}
