# rtrain-needs: run_dir failure run_state
# read_log.sh RUN_DIR RUN_ID OFFSET MAXBYTES INODE: a header line, then exactly COUNT raw bytes
# of train.log from byte START.
need_args "$#" 5
take_run_dir "$1" "$2"
offset=$3
max_bytes=$4
inode_seen=$5
for number in "$offset" "$max_bytes"; do
	if ! is_uint "$number" || [ "${#number}" -gt 15 ]; then
		fail "$E_USAGE" usage
	fi
done
case $inode_seen in
-) ;;
*) is_uint "$inode_seen" || fail "$E_USAGE" usage ;;
esac

# The state first: when it says the run is over, the size read afterwards holds every byte
# the run wrote.
run_state "$RUN_DIR" "$2"

log=$RUN_DIR/train.log
inode_now=-
size_now=0
opened=
# One open descriptor for stat and read, so a rotation in between cannot mix two files.
if [ -f "$log" ] && { command exec 3<"$log"; } 2>/dev/null; then
	opened=1
	if stat_out=$(stat -L -c '%i %s' /dev/fd/3 2>/dev/null); then
		inode_now=${stat_out%% *}
		size_now=${stat_out#* }
	else
		stat_out=$(ls -id -- "$log" 2>/dev/null) && inode_now=${stat_out%% *}
		size_now=$(size_of "$log") || size_now=0
		inode_now=${inode_now##* }
	fi
fi
is_uint "$size_now" || size_now=0

start=$offset
if [ "$inode_seen" != - ] && [ "$inode_seen" != "$inode_now" ]; then
	start=0
elif [ "$size_now" -lt "$offset" ]; then
	start=0
fi
count=$((size_now - start))
[ "$count" -gt "$max_bytes" ] && count=$max_bytes
[ "$count" -lt 0 ] && count=0

emit log "$inode_now" "$size_now" "$start" "$count" "$RS_STATE" "$RS_EXIT"
if [ -n "$opened" ] && [ "$count" -gt 0 ]; then
	# tail seeks on a regular file. Should the file shrink meanwhile, NUL padding still
	# delivers exactly COUNT bytes; the next read sees the shrink and starts over.
	{
		tail -c "+$((start + 1))" <&3 | head -c "$count"
		head -c "$count" /dev/zero
	} 2>/dev/null | head -c "$count"
fi
exit 0
