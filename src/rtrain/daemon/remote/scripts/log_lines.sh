# rtrain-needs: run_dir
# log_lines.sh RUN_DIR RUN_ID N: the byte offset in train.log where its last N lines begin
# (`offset OFFSET`); 0 when the log holds fewer, or is not there yet.
need_args "$#" 3
take_run_dir "$1" "$2"
{ is_uint "$3" && [ "${#3}" -le 9 ]; } || fail "$E_USAGE" usage
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
log=$RUN_DIR/train.log
if [ ! -f "$log" ]; then
	emit offset 0
	exit 0
fi
# The size first, and the lines counted within it: the log may grow meanwhile.
size=$(size_of "$log") || fail "$E_IO" unreadable
if [ "$3" = 0 ]; then
	emit offset "$size"
	exit 0
fi
# A last line without its newline counts as a line, as for tail(1).
kept=$(head -c "$size" -- "$log" | tail -n "$3" | wc -c) || fail "$E_IO" unreadable
kept=${kept##*[ 	]}
emit offset $((size - kept))
exit 0
