# preflight.sh PYTHON WORKDIR: can this host train? Reports; the daemon decides.
need_args "$#" 2
python_arg=$1
workdir_arg=$2

# PYTHON may be `~/venv/bin/python`: expand the tilde like a workdir.
case $python_arg in
'~/'*) python_cmd=$(expand_workdir "$python_arg") ;;
*) python_cmd=$python_arg ;;
esac

# Each python probe arms its own alarm, so a wedged interpreter cannot hold the channel open.
if ! have "$python_cmd"; then
	emit python_ok 0
	emit python_error "$(flat "$python_arg: command not found")"
elif python_out=$("$python_cmd" -c 'import signal, sys
signal.alarm(20)
print("%d.%d.%d" % sys.version_info[:3])' 2>&1); then
	emit python_ok 1
	emit python_version "$(flat "$python_out")"
	torch_out=$("$python_cmd" -c 'import signal
signal.alarm(30)
import torch
print(torch.__version__)
print(torch.version.cuda or "none")' 2>/dev/null) && {
		torch_version=${torch_out%%"$NL"*}
		torch_cuda=${torch_out#*"$NL"}
		emit torch "$(flat "$torch_version")"
		emit cuda "$(flat "$torch_cuda")"
	}
else
	emit python_ok 0
	emit python_error "$(flat "$python_out")"
fi

if ! have nvidia-smi; then
	emit nvidia_smi missing
elif gpu_out=$(nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits 2>&1); then
	while IFS= read -r gpu_line || [ -n "$gpu_line" ]; do
		[ -n "$gpu_line" ] || continue
		# "0, NVIDIA H100 80GB HBM3, 81559": index first, memory last, the name between.
		gpu_index=${gpu_line%%,*}
		gpu_rest=${gpu_line#*,}
		gpu_memory=${gpu_rest##*,}
		gpu_name=${gpu_rest%,*}
		gpu_name=${gpu_name# }
		gpu_memory=${gpu_memory# }
		emit gpu "$(flat "$gpu_index")" "$(flat "$gpu_name")" "$(flat "$gpu_memory")"
		gpu_line=
	done <<EOF
$gpu_out
EOF
else
	emit nvidia_smi error "$(flat "$gpu_out")"
fi

if workdir=$(expand_workdir "$workdir_arg"); then
	emit workdir "$workdir"
	probe=$workdir/.rtrain-probe.$$
	# shellcheck disable=SC2174 # only the workdir itself must be private
	if ! workdir_msg=$(mkdir -p -m 700 -- "$workdir" 2>&1); then
		emit workdir_ok 0
		emit workdir_error "$(flat "$workdir_msg")"
	elif ! workdir_msg=$({ : >"$probe"; } 2>&1); then
		emit workdir_ok 0
		emit workdir_error "$(flat "$workdir_msg")"
	else
		rm -f -- "$probe"
		emit workdir_ok 1
	fi
	if df_out=$(df -Pk -- "$workdir" 2>/dev/null); then
		df_line=${df_out#*"$NL"}
		set -f
		# shellcheck disable=SC2086 # split df's columns on purpose
		set -- $df_line
		set +f
		if [ "$#" -ge 4 ] && is_uint "$4"; then
			emit free_bytes "$(($4 * 1024))"
		fi
	fi
else
	emit workdir_ok 0
	emit workdir_error "workdir must be ~, ~/PATH, an absolute path or a path relative to the home directory"
fi

if have setsid; then
	emit setsid 1
else
	emit setsid 0
fi
emit boot_id "$(boot_id)"
emit uname "$(flat "$(uname -srm 2>/dev/null)")"
exit 0
