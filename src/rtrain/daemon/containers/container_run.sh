# rtrain-container [--print] RUNTIME IMAGE RUN_ID NAMES CMD...: runs CMD (the run's steps: the
# setup, then the trainer) inside IMAGE, in the run dir, and exits with the container's exit
# code. Shipped into the run dir and run by the run's wrapper, after the GPU gate, so the
# claimed GPUs are in CUDA_VISIBLE_DEVICES. RUNTIME is auto (podman, docker, apptainer,
# singularity: the first the host has), or one of them. NAMES is the run's variables (env and
# secrets) by name, comma-separated: their values reach the container through an env file
# (`--env-file`, mode 0600 in the run's .rtrain/), never on a command line nor in the runtime
# client's environment. A watcher removes the file as soon as the container's first step has
# run (the runtime read the file before starting it: the step marks `.rtrain/container.up`
# with a shell redirection, which needs no tool of the image), or when the client ends, should
# the container never have started. With podman and docker, a value with a line break, which
# their env files cannot hold, passes by name from this process's environment (`--env NAME`);
# apptainer reads its env file as shell, so there every value is quoted in it.
# --print: print the runtime's argv, one word a line, write the env file and run nothing:
# what would run, to read.
print=
if [ "$1" = --print ]; then
	print=1
	shift
fi
runtime=$1
image=$2
run_id=$3
names=$4
shift 4

case $runtime in
auto)
	for try in podman docker apptainer singularity; do
		if command -v "$try" >/dev/null 2>&1; then
			runtime=$try
			break
		fi
	done
	if [ "$runtime" = auto ]; then
		printf 'rtrain: cannot run the image %s: this host has no podman, docker, apptainer or singularity on PATH\n' "$image"
		exit 127
	fi
	;;
podman | docker | apptainer | singularity)
	if [ -z "$print" ] && ! command -v "$runtime" >/dev/null 2>&1; then
		printf 'rtrain: cannot run the image %s: %s is not on PATH on this host\n' "$image" "$runtime"
		exit 127
	fi
	;;
*)
	printf 'rtrain: unknown container runtime %s\n' "$runtime"
	exit 2
	;;
esac
run_dir=$(pwd)
if [ -z "$print" ]; then
	# stop.sh reads it to remove the container, whatever became of this client.
	printf '%s\n' "$runtime" >container.tmp && mv -f container.tmp container
fi
[ -d .rtrain ] || mkdir -m 700 .rtrain
env_file=$run_dir/.rtrain/container.env
up_file=$run_dir/.rtrain/container.up
rm -f -- "$up_file"
(
	umask 077
	: >"$env_file"
)
newline='
'

# The options go before CMD: CMD is rotated to the end once they are in.
count=$#
case $runtime in
apptainer | singularity)
	# The container's processes are the host's own, children of this one: they keep the run's
	# marker and the rest of the environment (no --cleanenv), CUDA_VISIBLE_DEVICES included.
	set -- "$@" exec --bind "$run_dir:$run_dir" --pwd "$run_dir"
	if [ -n "${CUDA_VISIBLE_DEVICES-}" ]; then
		set -- "$@" --nv
	fi
	;;
*)
	set -- "$@" run --name "rtrain-$run_id" --rm --init --network host \
		--volume "$run_dir:$run_dir" --workdir "$run_dir" \
		--env "RTRAIN_RUN_ID=$run_id" --env PYTHONUNBUFFERED
	;;
esac
set -f
old_ifs=$IFS
IFS=,
# shellcheck disable=SC2086 # validated variable names, split on commas on purpose
for name in $names; do
	value=$(
		printenv "$name"
		echo x
	)
	value=${value%?}
	value=${value%"$newline"}
	case $runtime in
	apptainer | singularity)
		quoted=$(printf '%s' "$value" | sed "s/'/'\\\\''/g")
		printf "%s='%s'\n" "$name" "$quoted" >>"$env_file"
		unset "$name"
		;;
	*)
		case $value in
		*"$newline"*) set -- "$@" --env "$name" ;;
		*)
			printf '%s=%s\n' "$name" "$value" >>"$env_file"
			unset "$name"
			;;
		esac
		;;
	esac
done
IFS=$old_ifs
set -- "$@" --env-file "$env_file"
case $runtime in
podman | docker)
	if [ "${CUDA_VISIBLE_DEVICES+set}" = set ]; then
		if [ -z "$CUDA_VISIBLE_DEVICES" ]; then
			# No GPU for this run: the container sees none either.
			set -- "$@" --env CUDA_VISIBLE_DEVICES
		elif [ "$runtime" = docker ]; then
			# The runtime maps exactly these devices, numbered from 0 inside: no CUDA_VISIBLE_DEVICES.
			set -- "$@" --gpus "\"device=$CUDA_VISIBLE_DEVICES\""
		else
			IFS=,
			for index in $CUDA_VISIBLE_DEVICES; do
				set -- "$@" --device "nvidia.com/gpu=$index"
			done
			IFS=$old_ifs
		fi
	fi
	;;
esac
set +f
# shellcheck disable=SC2016 # the inner shell's words
set -- "$@" "$image" /bin/sh -c ': >"$0"; exec "$@"' "$up_file"
while [ "$count" -gt 0 ]; do
	set -- "$@" "$1"
	shift
	count=$((count - 1))
done
if [ -n "$print" ]; then
	# The env file stays, to be read: it is the caller's own look at the run.
	printf '%s\n' "$runtime" "$@"
	exit 0
fi
case $runtime in
podman | docker)
	# The runtime's client is not marked as the run: a process it leaves behind for good
	# (podman's rootless pause process) must not read as the run still running. The run's
	# processes inside the container carry the marker.
	unset RTRAIN_RUN_ID
	;;
esac
# The watcher is a fresh process (env -u, not a subshell's unset: /proc/PID/environ keeps what
# a process was started with), so it never reads as the run's own: a stop of a run that just
# ended finds nothing of it alive during the watcher's last nap.
# shellcheck disable=SC2016 # the inner shell's words
env -u RTRAIN_RUN_ID sh -c '
	trap "" HUP INT
	while kill -0 "$1" 2>/dev/null && [ ! -e "$3" ]; do sleep 1; done
	rm -f -- "$2" "$3"
' rtrain-container-watcher "$$" "$env_file" "$up_file" </dev/null >/dev/null 2>&1 &
exec "$runtime" "$@"
