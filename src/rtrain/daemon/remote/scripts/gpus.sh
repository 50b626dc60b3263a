# rtrain-needs: processes nap own_files
# gpus.sh look WORKDIR SHARE [RUN_ID]
# gpus.sh reserve WORKDIR RUN_ID COUNT SHARE
# gpus.sh release WORKDIR RUN_ID
# gpus.sh gate WORKDIR RUN_ID COUNT SHARE WAIT -- CMD...
# The GPUs of this host as the runs of WORKDIR share them. Claims live in WORKDIR/.gpus/:
# one file per GPU index holding `RUN_ID EPOCH`, taken under a lock (a mkdir). A claim
# counts while its run has no `status` file and a process carries its marker, so it is
# released however the run ends: by its end, a kill, a reboot (`lost`).
#   look: `gpus_total N`, then `gpu INDEX free|held|busy RUN_ID|MIB` per GPU. `busy`: no
#         rtrain run of WORKDIR holds it but nvidia-smi shows memory in use (someone else's
#         job); SHARE=1 counts those as free. RUN_ID's own claims count as free (`-`: none).
#   reserve: (a pool's placement, before anything is shipped) claims COUNT free GPUs for
#         RUN_ID now, `reserved INDEX,...`, or exits E_GPUS_BUSY. A reservation counts for
#         RESERVE_S while its run has not launched; the run's gate takes it over.
#   release: drops RUN_ID's reservations (a placement that did not launch).
#   gate: (shipped into the run dir and run as the trainer's first step) claims COUNT free
#         GPUs and execs CMD with CUDA_VISIBLE_DEVICES naming them. Too few free: WAIT=0
#         exits E_GPUS_BUSY; WAIT=1 writes `queued` (what it waits for) in the run's .rtrain/ and
#         tries again every 2 s, on the host, whoever is connected.
need_args "$#" 2
mode=$1
workdir=$(expand_workdir "$2") || fail "$E_USAGE" bad_workdir
claims=$workdir/.gpus
# Memory in use above this on a GPU no run holds means another process uses it.
BUSY_MIB=100
# How long a pool's reservation holds GPUs for a run still being shipped.
RESERVE_S=1800

# GPU_INDEX GPU_USED: one line `INDEX USED_MIB` per GPU, or nothing without nvidia-smi.
gpu_list() {
	have nvidia-smi || return 0
	nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits 2>/dev/null |
		awk -F', *' '$1 ~ /^[0-9]+$/ { used = ($2 ~ /^[0-9]+$/) ? $2 : 0; print $1, used }'
}

# True while RUN_ID (of WORKDIR) still holds what it claimed at EPOCH (TAG `reserved`: not
# launched yet).
claim_live() {
	[ -n "$1" ] || return 1
	own_dir "$workdir/$1"
	[ -f "$OWN/status" ] && return 1
	if [ "${3-}" = reserved ] && is_uint "${2-}" && [ $(($(date +%s) - $2)) -lt "$RESERVE_S" ]; then
		return 0
	fi
	have_proc || return 0
	[ -n "$(marked_pids "$1")" ]
}

# Removes every claim file of RUN_ID (TAG given: only those with that tag). Under the lock.
drop_claims() {
	for dc_file in "$claims"/[0-9]*; do
		[ -f "$dc_file" ] || continue
		dc_holder=
		dc_tag=
		read -r dc_holder _ dc_tag <"$dc_file" 2>/dev/null
		[ "$dc_holder" = "$1" ] || continue
		[ -z "${2-}" ] || [ "$dc_tag" = "$2" ] || continue
		rm -f -- "$dc_file"
	done
}

# GPU_STATES: `INDEX free|held|busy WHO` lines, ME's own claims counting as free.
gpu_states() {
	GPU_STATES=
	GPU_TOTAL=0
	gs_list=$(gpu_list)
	while read -r gs_index gs_used; do
		[ -n "$gs_index" ] || continue
		GPU_TOTAL=$((GPU_TOTAL + 1))
		gs_holder=
		gs_epoch=
		gs_tag=
		if [ -f "$claims/$gs_index" ]; then
			read -r gs_holder gs_epoch gs_tag <"$claims/$gs_index" 2>/dev/null
		fi
		if [ -n "$gs_holder" ] && [ "$gs_holder" = "${1-}" ]; then
			GPU_STATES="$GPU_STATES$gs_index free -$NL" # this run's own claim, from before
		elif [ -n "$gs_holder" ] && claim_live "$gs_holder" "$gs_epoch" "$gs_tag"; then
			GPU_STATES="$GPU_STATES$gs_index held $gs_holder$NL"
		elif [ "$gs_used" -gt "$BUSY_MIB" ]; then
			GPU_STATES="$GPU_STATES$gs_index busy $gs_used$NL"
		else
			GPU_STATES="$GPU_STATES$gs_index free -$NL"
		fi
	done <<EOF
$gs_list
EOF
}

# The claims lock: a directory, taken atomically; one left by a dead holder is broken.
lock_claims() {
	# shellcheck disable=SC2174 # private: the claims dir itself; its parents are the workdir's
	mkdir -p -m 700 -- "$claims" 2>/dev/null || fail "$E_IO" gpus "cannot create $claims"
	lc_tries=0
	nap_init
	until mkdir -- "$claims/lock" 2>/dev/null; do
		lc_pid=
		{ IFS= read -r lc_pid <"$claims/lock/pid"; } 2>/dev/null
		if [ -n "$lc_pid" ] && ! pid_alive "$lc_pid"; then
			# Only one breaker wins the rename; the others find the lock gone or new.
			mv -- "$claims/lock" "$claims/lock.stale.$$" 2>/dev/null && rm -rf -- "$claims/lock.stale.$$"
			continue
		fi
		lc_tries=$((lc_tries + 1))
		[ "$lc_tries" -lt "$((30 * NAP_PER_SECOND))" ] || fail "$E_IO" gpus "the GPU claims of $workdir stay locked"
		nap
	done
	printf '%s\n' "$$" >"$claims/lock/pid"
}

unlock_claims() {
	rm -rf -- "$claims/lock"
}

# CHOSEN: up to COUNT free GPUs (busy ones too with SHARE=1) of GPU_STATES, TAKEN how many,
# WAITING_ON what holds the others.
choose_gpus() {
	chosen=
	taken=0
	waiting_on=
	set -f
	IFS=$NL
	for g_line in $GPU_STATES; do
		# INDEX STATE WHO, split without `set --`, which would lose the command
		g_index=${g_line%% *}
		g_rest=${g_line#* }
		g_state=${g_rest%% *}
		g_who=${g_rest#* }
		if [ "$g_state" = free ] || { [ "$g_state" = busy ] && [ "$2" = 1 ]; }; then
			if [ "$taken" -lt "$1" ]; then
				chosen=${chosen:+$chosen,}$g_index
				taken=$((taken + 1))
			fi
		elif [ "$g_state" = held ]; then
			waiting_on="$waiting_on, GPU $g_index held by $g_who"
		else
			waiting_on="$waiting_on, GPU $g_index busy ($g_who MiB used by another process)"
		fi
	done
	unset IFS
	set +f
}

# Writes RUN_ID's claim (TAG) on each GPU of CHOSEN, its earlier claims dropped. Under the lock.
write_claims() {
	drop_claims "$1"
	wc_now=$(date +%s)
	IFS=,
	for g_index in $chosen; do
		printf '%s %s%s\n' "$1" "$wc_now" "${2:+ $2}" >"$claims/$g_index"
	done
	unset IFS
}

case $mode in
look)
	share=${3:-0}
	me=${4:--}
	[ "$me" = - ] && me=
	gpu_states "$me"
	emit gpus_total "$GPU_TOTAL"
	printf '%s' "$GPU_STATES" | while read -r l_index l_state l_who; do
		[ "$share" = 1 ] && [ "$l_state" = busy ] && l_state=free
		emit gpu "$l_index" "$l_state" "$l_who"
	done
	exit 0
	;;
reserve)
	need_args "$#" 5
	valid_run_id "$3" || fail "$E_USAGE" bad_run_id
	is_uint "$4" || fail "$E_USAGE" usage
	lock_claims
	gpu_states "$3"
	choose_gpus "$4" "$5"
	if [ "$GPU_TOTAL" -eq 0 ] || [ "$taken" -lt "$4" ]; then
		unlock_claims
		say "not enough free GPUs: ${waiting_on#, }"
		exit "$E_GPUS_BUSY"
	fi
	write_claims "$3" reserved
	unlock_claims
	emit reserved "$chosen"
	exit 0
	;;
release)
	need_args "$#" 3
	valid_run_id "$3" || fail "$E_USAGE" bad_run_id
	[ -d "$claims" ] || exit 0
	lock_claims
	drop_claims "$3" reserved
	unlock_claims
	exit 0
	;;
gate) ;;
*) fail "$E_USAGE" usage ;;
esac

need_args "$#" 7
run_id=$3
count=$4
share=$5
wait_free=$6
[ "$7" = -- ] || fail "$E_USAGE" usage
shift 7
valid_run_id "$run_id" || fail "$E_USAGE" bad_run_id
is_uint "$count" || fail "$E_USAGE" usage
run_dir=$workdir/$run_id
# Where `queued` goes (kept: gpu_states sets BOOK for the runs it looks at).
own_dir "$run_dir"
gate_book=$BOOK

while :; do
	lock_claims
	gpu_states "$run_id"
	if [ "$count" -gt "$GPU_TOTAL" ] && [ "$GPU_TOTAL" -gt 0 ]; then
		unlock_claims
		say "asked for $count GPU(s); this host has $GPU_TOTAL"
		exit "$E_GPUS_BUSY"
	fi
	choose_gpus "$count" "$share"
	if [ "$taken" -ge "$count" ]; then
		write_claims "$run_id"
		unlock_claims
		break
	fi
	unlock_claims
	reason="waiting for $count GPU(s) of $GPU_TOTAL${waiting_on:+: ${waiting_on#, }}"
	if [ "$wait_free" != 1 ]; then
		say "not enough free GPUs: ${waiting_on#, }"
		exit "$E_GPUS_BUSY"
	fi
	printf '%s\n' "$reason" >"$gate_book/queued.tmp" && mv -f -- "$gate_book/queued.tmp" "$gate_book/queued"
	sleep 2
done
rm -f -- "$gate_book/queued"
# Under the trainer's CUDA_VISIBLE_DEVICES a host without GPUs keeps its own (none to share).
if [ "$GPU_TOTAL" -gt 0 ]; then
	CUDA_VISIBLE_DEVICES=$chosen
	export CUDA_VISIBLE_DEVICES
fi
umask "$CALLER_UMASK"
exec "$@"
