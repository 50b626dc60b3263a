# preflight.sh PYTHON WORKDIR [--dist NAME]... [--hf MODEL]...: can this host train? One probe
# for every check; it reports, the daemon decides. With --hf, stdin holds one line: the
# Hugging Face token to try (empty: the host's own), read before anything else runs.
need_args "$#" 2
python_arg=$1
workdir_arg=$2
shift 2

pf_dists=
pf_models=
while [ "$#" -gt 0 ]; do
	case $1 in
	--dist | --hf)
		[ "$#" -ge 2 ] || fail "$E_USAGE" usage
		# Names only ever of these characters; the daemon checked them already.
		case $2 in
		'' | -* | *[!A-Za-z0-9._/-]*) fail "$E_USAGE" bad_name "$(flat "$2")" ;;
		esac
		if [ "$1" = --dist ]; then
			pf_dists="$pf_dists$2$NL"
		else
			pf_models="$pf_models$2$NL"
		fi
		shift 2
		;;
	*) fail "$E_USAGE" usage ;;
	esac
done
pf_token=
if [ -n "$pf_models" ]; then
	IFS= read -r pf_token || :
fi

# The Python probe, the same for the requested interpreter and every candidate. Its syntax
# also parses under Python 2, so an old `python` still says which version it is. It runs
# through a bootstrap that reads it from the environment: an interpreter that is not Python
# (`--python ls`) then never prints the probe back into a message.
# daemon/remote/preflight_probe.py: the daemon puts its text in place of the word below.
PF_PROBE='@preflight_probe.py@'
PF_BOOT='import os; exec(os.environ["RTRAIN_PROBE"])'

# py_probe PYTHON MODE [NAMES]: run the probe. Its answers land in PY_* variables (PY_HAS
# lists the keys it printed), anything else it printed in PY_REST, its exit status in
# PY_STATUS. In a subshell with a clean environment from the home directory, so nothing in the
# caller's PYTHONPATH or directory shadows the interpreter's own packages.
py_probe() {
	pp_all=$(
		unset PYTHONPATH
		cd -- "${HOME:-/}" 2>/dev/null || cd /
		# Everything but the bootstrap travels in the environment: a program that is not
		# Python has nothing of ours to print back.
		RTRAIN_PROBE=$PF_PROBE RTRAIN_PROBE_MODE=$2 RTRAIN_PROBE_NAMES=${3-}
		export RTRAIN_PROBE RTRAIN_PROBE_MODE RTRAIN_PROBE_NAMES
		if have timeout; then
			exec timeout 45 "$1" -c "$PF_BOOT" </dev/null 2>&1
		else
			exec "$1" -c "$PF_BOOT" </dev/null 2>&1
		fi
	)
	PY_STATUS=$?
	PY_REST='' PY_HAS=' ' PY_DISTS=''
	PY_VERSION='' PY_EXECUTABLE='' PY_IDENTITY='' PY_ENV='' PY_TORCH='' PY_TORCH_CUDA=''
	PY_TORCH_GPUS='' PY_TORCH_ERROR='' PY_TORCH_FOUND=''
	# One pass, in this shell: no process per field.
	while IFS= read -r pp_line || [ -n "$pp_line" ]; do
		case $pp_line in
		pyprobe_*)
			pp_line=${pp_line#pyprobe_}
			pp_key=${pp_line%%"$TAB"*}
			pp_value=
			case $pp_line in *"$TAB"*) pp_value=${pp_line#*"$TAB"} ;; esac
			PY_HAS="$PY_HAS$pp_key "
			case $pp_key in
			version) PY_VERSION=$pp_value ;;
			executable) PY_EXECUTABLE=$pp_value ;;
			identity) PY_IDENTITY=$pp_value ;;
			env) PY_ENV=$pp_value ;;
			torch) PY_TORCH=$pp_value ;;
			torch_cuda) PY_TORCH_CUDA=$pp_value ;;
			torch_gpus) PY_TORCH_GPUS=$pp_value ;;
			torch_error) PY_TORCH_ERROR=$pp_value ;;
			torch_found) PY_TORCH_FOUND=$pp_value ;;
			dist) PY_DISTS="${PY_DISTS}dist$TAB$pp_value$NL" ;;
			esac
			;;
		# The bootstrap echoed by a program that is not Python is dropped, not shown.
		*RTRAIN_PROBE*) ;;
		?*) PY_REST="$PY_REST$pp_line$NL" ;;
		esac
		pp_line=
	done <<EOF
$pp_all
EOF
}

py_has() {
	case $PY_HAS in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# The last line a failed probe printed, for the daemon's sentence.
py_last_words() {
	plw=${PY_REST%"$NL"}
	plw=${plw##*"$NL"}
	flat "$plw"
}

# True when PATH (an interpreter) sits in a venv: it shares its base's binary, not its packages.
in_venv() {
	[ -f "${1%/*}/../pyvenv.cfg" ]
}

# The GPUs, the driver and the processes on them: `gpu`, `driver_cuda`, `gpu_app` lines, or
# `nvidia_smi missing|error MSG`.
gpu_probe() {
	if ! have nvidia-smi; then
		emit nvidia_smi missing
		return 0
	fi
	if ! gpu_out=$(nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu,uuid,driver_version \
		--format=csv,noheader,nounits </dev/null 2>&1); then
		emit nvidia_smi error "$(flat "$gpu_out")"
		return 0
	fi
	while IFS= read -r gpu_line || [ -n "$gpu_line" ]; do
		[ -n "$gpu_line" ] || continue
		# "0, NVIDIA H100 80GB HBM3, 81559, 0, 0, GPU-..., 550.54.15": the index first, five
		# fields last, the name (which may hold a comma) between.
		gpu_index=${gpu_line%%,*}
		gpu_rest=${gpu_line#*,}
		gpu_commas=$(printf '%s' "$gpu_line" | tr -cd ,)
		if [ "${#gpu_commas}" -lt 6 ]; then
			# Not the seven fields asked for: take the name and the memory, as far as they go.
			gpu_name=${gpu_rest%%,*}
			gpu_total=${gpu_rest##*,}
			emit gpu "$(flat "$gpu_index")" "$(flat "${gpu_name# }")" "$(flat "${gpu_total# }")"
			gpu_line=
			continue
		fi
		gpu_driver=${gpu_rest##*,}
		gpu_rest=${gpu_rest%,*}
		gpu_uuid=${gpu_rest##*,}
		gpu_rest=${gpu_rest%,*}
		gpu_util=${gpu_rest##*,}
		gpu_rest=${gpu_rest%,*}
		gpu_used=${gpu_rest##*,}
		gpu_rest=${gpu_rest%,*}
		gpu_total=${gpu_rest##*,}
		gpu_name=${gpu_rest%,*}
		emit gpu "$(flat "$gpu_index")" "$(flat "${gpu_name# }")" "$(flat "${gpu_total# }")" \
			"$(flat "${gpu_used# }")" "$(flat "${gpu_util# }")" "$(flat "${gpu_uuid# }")" \
			"$(flat "${gpu_driver# }")"
		gpu_line=
	done <<EOF
$gpu_out
EOF
	# The CUDA version the driver supports is only in the table's banner.
	cuda_line=$(nvidia-smi </dev/null 2>/dev/null | grep -m1 'CUDA Version')
	case $cuda_line in
	*'CUDA Version:'*)
		driver_cuda=${cuda_line#*CUDA Version:}
		driver_cuda=${driver_cuda# }
		emit driver_cuda "$(flat "${driver_cuda%% *}")"
		;;
	esac
	apps_out=$(nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory,process_name \
		--format=csv,noheader,nounits </dev/null 2>/dev/null) || apps_out=
	while IFS= read -r app_line || [ -n "$app_line" ]; do
		case $app_line in
		GPU-*,*,*,*) ;;
		*) continue ;;
		esac
		app_uuid=${app_line%%,*}
		app_rest=${app_line#*, }
		app_pid=${app_rest%%,*}
		app_rest=${app_rest#*, }
		app_mem=${app_rest%%,*}
		app_name=${app_rest#*, }
		# Whose is it: a run of rtrain's carries its marker; another user's process cannot
		# be read at all, and counts as someone else's.
		app_run=-
		if is_uint "$app_pid" && [ -r "/proc/$app_pid/environ" ]; then
			app_run=$({ tr '\0' '\n' <"/proc/$app_pid/environ"; } 2>/dev/null | sed -n 's/^RTRAIN_RUN_ID=//p' | head -n 1)
			[ -n "$app_run" ] || app_run=-
		fi
		emit gpu_app "$(flat "$app_uuid")" "$(flat "$app_pid")" "$(flat "$app_mem")" "$(flat "$app_run")" "$(flat "$app_name")"
		app_line=
	done <<EOF
$apps_out
EOF
}

# nvidia-smi is slow on real hosts (it wakes the driver): it answers while python starts.
pf_tmp=$(mktemp -d 2>/dev/null) || pf_tmp=
if [ -n "$pf_tmp" ]; then
	gpu_probe >"$pf_tmp/gpu" &
	gpu_job=$!
	gpu_lines=
else
	gpu_lines=$(gpu_probe)
fi

# PYTHON may be `~/venv/bin/python`: expand the tilde like a workdir.
# shellcheck disable=SC2088 # the word as typed: expand_workdir expands it
case $python_arg in
'~/'*) python_cmd=$(expand_workdir "$python_arg") ;;
*) python_cmd=$python_arg ;;
esac

hub_python=
search=0
torch_cpu=0
seen_ids=' '
seen_real=' '
if ! have "$python_cmd"; then
	emit python_ok 0
	emit python_error "$(flat "$python_arg: command not found")"
	search=1
else
	py_probe "$python_cmd" python "$pf_dists"
	if py_has version; then
		emit python_ok 1
		emit python_version "$(flat "$PY_VERSION")"
		emit python_executable "$(flat "$PY_EXECUTABLE")"
		[ -z "$PY_ENV" ] || emit python_env "$PY_ENV"
		hub_python=$python_cmd
		seen_ids=" $PY_IDENTITY "
		pf_path=$(command -v "$python_cmd")
		in_venv "$pf_path" || seen_real=" $(real_path "$pf_path" 2>/dev/null) "
		if py_has torch; then
			emit torch "$PY_TORCH"
			emit cuda "$PY_TORCH_CUDA"
			[ -z "$PY_TORCH_GPUS" ] || emit torch_gpus "$PY_TORCH_GPUS"
			[ "$PY_TORCH_CUDA" != none ] || torch_cpu=1
		elif py_has torch_error; then
			emit torch_error "$PY_TORCH_ERROR"
			search=1
		elif py_has torch_missing; then
			search=1
		elif py_has 'done'; then
			: # too old a Python to look for torch
		else
			emit torch_error "$(flat "the probe ended (exit status $PY_STATUS) while importing torch: $(py_last_words)")"
			search=1
		fi
		printf '%s' "$PY_DISTS"
		py_has 'done' || [ -z "$pf_dists" ] || emit dists_unchecked
	else
		emit python_ok 0
		emit python_status "$PY_STATUS"
		emit python_error "$(py_last_words)"
		search=1
	fi
fi

if [ -n "$pf_tmp" ]; then
	wait "$gpu_job" 2>/dev/null
	gpu_lines=$(cat "$pf_tmp/gpu" 2>/dev/null)
	rm -rf -- "$pf_tmp"
fi
[ -z "$gpu_lines" ] || printf '%s\n' "$gpu_lines"
# A CPU-only torch on a host with GPUs: a CUDA build elsewhere on the host is worth naming.
case $NL$gpu_lines in
*"${NL}gpu$TAB"*) [ "$torch_cpu" = 0 ] || search=1 ;;
esac

# The other interpreters of the host, where images, conda and people put them: one level of
# globbing each (no find), so the search costs a few directory reads.
pf_candidates() {
	for pc_name in python3 python python3.14 python3.13 python3.12 python3.11 python3.10 \
		python3.9 python3.8; do
		command -v "$pc_name" 2>/dev/null
	done
	for pc_path in /usr/local/bin/python3 /usr/local/bin/python3.[0-9] \
		/usr/local/bin/python3.[0-9][0-9] /opt/*/bin/python /opt/*/envs/*/bin/python \
		/opt/*/.venv/bin/python "${CONDA_EXE%/bin/conda}"/envs/*/bin/python \
		"${MAMBA_ROOT_PREFIX:-/nonexistent}"/envs/*/bin/python \
		"$HOME"/*/bin/python "$HOME"/*/envs/*/bin/python "$HOME"/.conda/envs/*/bin/python \
		"$HOME"/.venv*/bin/python "$HOME"/*/.venv/bin/python "$HOME"/venvs/*/bin/python \
		"$HOME"/.virtualenvs/*/bin/python /workspace/.venv/bin/python \
		/workspace/*/bin/python /workspace/*/.venv/bin/python; do
		[ -f "$pc_path" ] && [ -x "$pc_path" ] && printf '%s\n' "$pc_path"
	done
}

# PATH (PREFIX/bin/python) -> PF_OWNER, the uid that owns it or its PREFIX (a venv's
# python is a link to a system binary: the link and its folder say whose it is), when that
# is another account's (neither this user nor root); empty otherwise. Such a python is
# never suggested: its owner may change it under the run, or take it away.
pf_foreign() {
	PF_OWNER=
	for pfo_path in "$1" "${1%/bin/*}"; do
		# shellcheck disable=SC2012 # ls -n is the portable way to a numeric owner
		pfo_uid=$(ls -ldn -- "$pfo_path" 2>/dev/null | awk '{print $3}')
		is_uint "$pfo_uid" || continue
		if [ "$pfo_uid" != 0 ] && [ "$pfo_uid" != "$pf_uid" ]; then
			PF_OWNER=$pfo_uid
			return 0
		fi
	done
}

# True when the prefix of PATH (PREFIX/bin/python) holds a torch package: no process, a few
# stats, so the ones with torch are probed first and the probe limit never hides one.
torch_on_disk() {
	tod_prefix=${1%/bin/*}
	for tod_dir in "$tod_prefix"/lib/python3*/site-packages/torch \
		"$tod_prefix"/lib/python3*/dist-packages/torch \
		"$tod_prefix"/local/lib/python3*/dist-packages/torch; do
		[ -d "$tod_dir" ] && return 0
	done
	return 1
}

if [ "$search" = 1 ]; then
	pf_uid=$(id -u 2>/dev/null)
	probed=0
	paths_seen=$NL
	cand_first=
	cand_rest=
	while IFS= read -r cand; do
		if [ -z "$cand" ]; then
			continue
		elif torch_on_disk "$cand"; then
			cand_first="$cand_first$cand$NL"
		else
			cand_rest="$cand_rest$cand$NL"
		fi
	done <<EOF
$(pf_candidates)
EOF
	cand_list=$cand_first$cand_rest
	while IFS= read -r cand; do
		[ -n "$cand" ] || continue
		case $paths_seen in
		*"$NL$cand$NL"*) continue ;;
		esac
		paths_seen="$paths_seen$cand$NL"
		pf_foreign "$cand"
		if [ -n "$PF_OWNER" ]; then
			emit candidate "$(flat "$cand")" - - - - - - "another account's (uid $PF_OWNER): not offered"
			continue
		fi
		# Outside a venv an interpreter is its binary: one already probed is skipped unrun.
		if ! in_venv "$cand"; then
			cand_real=$(real_path "$cand" 2>/dev/null) || cand_real=$cand
			case $seen_real in
			*" $cand_real "*) continue ;;
			esac
			seen_real="$seen_real$cand_real "
		fi
		[ "$probed" -lt 12 ] || break
		probed=$((probed + 1))
		py_probe "$cand" quick
		if ! py_has version; then
			emit candidate "$(flat "$cand")" - - - - - - "$(flat "exit status $PY_STATUS: $(py_last_words)")"
			continue
		fi
		[ -n "$hub_python" ] || hub_python=$cand
		# A pyenv shim is a script that runs an interpreter seen under another name.
		case $seen_ids in
		*" $PY_IDENTITY "*) continue ;;
		esac
		seen_ids="$seen_ids$PY_IDENTITY "
		if [ "$PY_TORCH_FOUND" != 1 ]; then
			emit candidate "$(flat "$cand")" "$PY_VERSION" - - - - "$(flat "$PY_EXECUTABLE")" ""
			continue
		fi
		py_probe "$cand" candidate
		cand_avail=${PY_TORCH_GPUS%%"$TAB"*}
		cand_devices=${PY_TORCH_GPUS#*"$TAB"}
		cand_devices=${cand_devices%%"$TAB"*}
		cand_error=$PY_TORCH_ERROR
		if ! py_has torch && [ -z "$cand_error" ] && ! py_has 'done'; then
			cand_error="the probe ended (exit status $PY_STATUS) while importing torch"
		fi
		emit candidate "$(flat "$cand")" "$PY_VERSION" "$PY_TORCH" "$PY_TORCH_CUDA" \
			"$cand_avail" "$cand_devices" "$(flat "$PY_EXECUTABLE")" "$(flat "$cand_error")"
	done <<EOF
$cand_list
EOF
fi

if [ -n "$pf_models" ]; then
	[ -n "$hub_python" ] || for hub_try in python3 python; do
		have "$hub_try" && hub_python=$hub_try && break
	done
	if [ -z "$hub_python" ]; then
		while IFS= read -r hub_model; do
			[ -z "$hub_model" ] || emit hf "$hub_model" unreachable "" "no Python on the host to ask the Hub with"
		done <<EOF
$pf_models
EOF
	else
		# printf is built in: the token is never an argument of any process.
		hub_all=$(
			unset PYTHONPATH
			cd -- "${HOME:-/}" 2>/dev/null || cd /
			RTRAIN_PROBE=$PF_PROBE RTRAIN_PROBE_MODE=hub RTRAIN_PROBE_NAMES=$pf_models
				export RTRAIN_PROBE RTRAIN_PROBE_MODE RTRAIN_PROBE_NAMES
			printf '%s\n' "$pf_token" | "$hub_python" -c "$PF_BOOT" 2>&1
		)
		pf_token=
		while IFS= read -r hub_line; do
			case $hub_line in
			pyprobe_hf*) printf '%s\n' "${hub_line#pyprobe_}" ;;
			esac
		done <<EOF
$hub_all
EOF
		case $hub_all in
		*pyprobe_done*) ;;
		*) emit hf_failed "$(flat "${hub_all##*"$NL"}")" ;;
		esac
	fi
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
emit end
exit 0
