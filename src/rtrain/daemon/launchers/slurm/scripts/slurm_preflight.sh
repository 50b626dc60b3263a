# slurm_preflight.sh WORKDIR [PARTITION]: what a Slurm login node offers, for preflight.
#   tool NAME 0|1                 sbatch, squeue, sinfo, sacct, scancel on PATH
#   node PARTITION HOST AVAIL STATE GRES GRES_USED    one line per node of each partition
#                                 (PARTITION ends in `*` for the default one)
#   accounting 0|1 MESSAGE        whether sacct answers
#   limit PARTITION GRPTRES MAXTRES MAXJOBS QOS       the user's associations, where readable
#   workdir PATH FREE_BYTES
need_args "$#" 1
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
partition=${2-}
case $partition in
*[!A-Za-z0-9_.-]*) fail "$E_USAGE" bad_partition ;;
esac

for tool in sbatch squeue sinfo sacct scancel; do
	if have "$tool"; then emit tool "$tool" 1; else emit tool "$tool" 0; fi
done
if have sinfo; then
	sinfo -h -N -O 'PartitionName:|,NodeHost:|,Available:|,StateLong:|,Gres:|,GresUsed:|' \
		${partition:+-p "$partition"} 2>/dev/null |
		while IFS='|' read -r p_name p_host p_avail p_state p_gres p_used _rest; do
			[ -n "$p_name" ] || continue
			emit node "$p_name" "$p_host" "$p_avail" "$p_state" "$p_gres" "$p_used"
		done
	# sinfo -N -O does not mark the default partition; the plain format does.
	default=$(sinfo -h -o '%P' 2>/dev/null | grep '\*$' | head -n 1)
	[ -n "$default" ] && emit default_partition "${default%\*}"
fi
if have sacct; then
	if answer=$(sacct -n -X -S now-1minutes -o JobID 2>&1); then
		emit accounting 1 -
	else
		emit accounting 0 "$(flat "$answer")"
	fi
else
	emit accounting 0 'sacct is not on PATH'
fi
if have sacctmgr; then
	sacctmgr -n -P show assoc user="$(id -un)" format=Partition,GrpTRES,MaxTRES,MaxJobs,QOS 2>/dev/null |
		while IFS='|' read -r l_part l_grp l_max l_jobs l_qos; do
			emit limit "${l_part:--}" "${l_grp:--}" "${l_max:--}" "${l_jobs:--}" "${l_qos:--}"
		done
fi
# shellcheck disable=SC2174 # private: the workdir itself; its parents are the user's own
mkdir -p -m 700 -- "$workdir" 2>/dev/null
free=$(df -Pk -- "$workdir" 2>/dev/null | awk 'NR == 2 { print $4 * 1024 }')
emit workdir "$workdir" "${free:--}"
exit 0
