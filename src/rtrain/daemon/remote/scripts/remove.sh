# remove.sh RUN_DIR RUN_ID: remove a run that is not running or queued: its whole directory.
# A run dir that is already gone answers `removed -`.
need_args "$#" 2
take_run_dir "$1" "$2"
if [ ! -e "$RUN_DIR" ] && [ ! -L "$RUN_DIR" ]; then
	emit removed -
	exit 0
fi
prove_run_dir "$2"
run_state "$RUN_DIR" "$2"
case $RS_STATE in
running | queued) fail "$E_REFUSED" "$RS_STATE" ;;
esac
if ! msg=$(rm -rf -- "$RUN_DIR" 2>&1); then
	say "$msg"
	fail "$E_IO" rm "$(flat "$msg")"
fi
emit removed "$RUN_DIR"
exit 0
