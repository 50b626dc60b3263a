# rtrain-needs: processes failure run_state
# watch.sh WORKDIR GPUS MAXBYTES [RUN_ID LOG_OFFSET JSONL_OFFSET]...: all the monitor asks of
# a host in one poll, in one command.
#   run   RUN_ID STATE EXIT SIGNAL STARTED DETAIL STALLED
#                                                   one per run, as status.sh prints it
#   gpu   CSV                                       with GPUS=1: nvidia-smi's line per GPU
#   app   RUN_ID CSV                                with GPUS=1: a compute process ("-": no
#                                                   run of these)
#   slice RUN_ID NAME START COUNT SIZE AGE          last, per run found, for NAME `log`
#                                                   (train.log) and `jsonl` (metrics.jsonl):
#                                                   exactly COUNT raw bytes from byte START
#                                                   follow, then a newline. AGE: seconds
#                                                   since train.log last changed, by this
#                                                   host's clock (`-` for metrics.jsonl, or
#                                                   when it cannot be told).
# A slice is the bytes after OFFSET, at most MAXBYTES of them: the last MAXBYTES when more
# wait, all of a file shorter than OFFSET (it was replaced).
need_args "$#" 3
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
gpus=$2
max_bytes=$3
shift 3
{ is_uint "$max_bytes" && [ "${#max_bytes}" -le 9 ]; } || fail "$E_USAGE" usage
[ $(($# % 3)) -eq 0 ] || fail "$E_USAGE" usage
set -f
found=
while [ "$#" -ge 3 ]; do
	for number in "$2" "$3"; do
		if ! is_uint "$number" || [ "${#number}" -gt 15 ]; then
			fail "$E_USAGE" usage
		fi
	done
	if ! valid_run_id "$1"; then
		shown=$(flat "$1")
		emit run "${shown:--}" missing - - - 'invalid run id'
	else
		run_state "$workdir/$1" "$1"
		emit run "$1" "$RS_STATE" "$RS_EXIT" "$RS_SIGNAL" "$RS_STARTED" "$RS_DETAIL" "$RS_STALLED" "$RS_FAILED_AT" "$RS_RANK0"
		# A run that just ended still sends its last bytes.
		[ "$RS_STATE" != missing ] && found="$found $1 $2 $3"
	fi
	shift 3
done

if [ "$gpus" = 1 ] && have nvidia-smi; then
	# The name last: it is the one field that may hold a comma.
	if gpu_out=$(nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,name --format=csv,noheader,nounits 2>/dev/null); then
		printf '%s\n' "$gpu_out" | while IFS= read -r gpu_line; do
			[ -n "$gpu_line" ] && emit gpu "$(flat "$gpu_line")"
		done
	fi
	if app_out=$(nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits 2>/dev/null); then
		printf '%s\n' "$app_out" | while IFS= read -r app_line; do
			[ -n "$app_line" ] || continue
			app_pid=${app_line%%,*}
			app_run=-
			if is_uint "$app_pid"; then
				# shellcheck disable=SC2086 # validated ids and numbers, split on purpose
				set -- $found
				while [ "$#" -ge 3 ]; do
					if has_marker "$app_pid" "$1"; then
						app_run=$1
						break
					fi
					shift 3
				done
			fi
			emit app "$app_run" "$(flat "$app_line")"
		done
	fi
fi

# FILE OFFSET -> W_START W_COUNT W_SIZE of the slice to send.
slice_of() {
	W_SIZE=0
	[ -f "$1" ] && W_SIZE=$(size_of "$1" 2>/dev/null)
	is_uint "$W_SIZE" || W_SIZE=0
	W_START=$2
	[ "$W_SIZE" -lt "$W_START" ] && W_START=0
	[ $((W_SIZE - W_START)) -gt "$max_bytes" ] && W_START=$((W_SIZE - max_bytes))
	W_COUNT=$((W_SIZE - W_START))
}

# RUN_ID NAME FILE OFFSET AGE: the slice line and exactly its bytes (NUL-padded should the
# file shrink meanwhile), then a newline.
send_slice() {
	slice_of "$3" "$4"
	emit slice "$1" "$2" "$W_START" "$W_COUNT" "$W_SIZE" "$5"
	if [ "$W_COUNT" -gt 0 ]; then
		{
			tail -c "+$((W_START + 1))" "$3" | head -c "$W_COUNT"
			head -c "$W_COUNT" /dev/zero
		} 2>/dev/null | head -c "$W_COUNT"
	fi
	printf '\n'
}

# FILE -> W_AGE: seconds since FILE last changed, by this host's clock (`-` unknown).
age_of() {
	W_AGE=-
	w_mtime=$(stat -c %Y -- "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null) || return 0
	is_uint "$w_mtime" || return 0
	W_AGE=$((w_now - w_mtime))
	[ "$W_AGE" -lt 0 ] && W_AGE=0
	return 0
}

w_now=$(date +%s)
# shellcheck disable=SC2086 # validated ids and numbers, split on purpose
set -- $found
while [ "$#" -ge 3 ]; do
	age_of "$workdir/$1/train.log"
	send_slice "$1" log "$workdir/$1/train.log" "$2" "$W_AGE"
	send_slice "$1" jsonl "$workdir/$1/metrics.jsonl" "$3" -
	shift 3
done
exit 0
