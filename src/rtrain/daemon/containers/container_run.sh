# rtrain-container RUNTIME IMAGE RUN_ID NAMES CMD...: runs CMD (the run's steps: the setup,
# then the trainer) inside IMAGE, in the run dir, and exits with the container's exit code.
# Shipped into the run dir and run by the run's wrapper, after the GPU gate, so the claimed
# GPUs are in CUDA_VISIBLE_DEVICES. RUNTIME is auto, podman or docker; NAMES is the run's
# variables (env and secrets) by name, comma-separated: their values reach the container
# through an env file (`--env-file`, mode 0600 in the run's .rtrain/), never on a command line
# nor in the runtime client's environment. A watcher removes the file as soon as the
# container's first step has run (the runtime read the file before starting it: the step marks
# `.rtrain/container.up` with a shell redirection, which needs no tool of the image), or when
# the client ends, should the container never have started. A value with a newline, which an env file cannot hold, passes by name
# from this process's environment (`--env NAME`).
runtime=$1
image=$2
run_id=$3
names=$4
shift 4

case $runtime in
auto)
	if command -v podman >/dev/null 2>&1; then
		runtime=podman
	elif command -v docker >/dev/null 2>&1; then
		runtime=docker
	else
		printf 'rtrain: cannot run the image %s: this host has neither podman nor docker on PATH\n' "$image"
		exit 127
	fi
	;;
podman | docker)
	if ! command -v "$runtime" >/dev/null 2>&1; then
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
# stop.sh reads it to remove the container, whatever became of this client.
printf '%s\n' "$runtime" >container.tmp && mv -f container.tmp container

# The options go before CMD: CMD is rotated to the end once they are in.
count=$#
set -- "$@" run --name "rtrain-$run_id" --rm --init --network host \
	--volume "$run_dir:$run_dir" --workdir "$run_dir" \
	--env "RTRAIN_RUN_ID=$run_id" --env PYTHONUNBUFFERED
set -f
old_ifs=$IFS
[ -d .rtrain ] || mkdir -m 700 .rtrain
env_file=$run_dir/.rtrain/container.env
newline='
'
(
	umask 077
	: >"$env_file"
)
IFS=,
# shellcheck disable=SC2086 # validated variable names, split on commas on purpose
for name in $names; do
	value=$(printenv "$name"; echo x)
	value=${value%?}
	value=${value%"$newline"}
	case $value in
	*"$newline"*) set -- "$@" --env "$name" ;;
	*)
		printf '%s=%s\n' "$name" "$value" >>"$env_file"
		unset "$name"
		;;
	esac
done
IFS=$old_ifs
set -- "$@" --env-file "$env_file"
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
set +f
up_file=$run_dir/.rtrain/container.up
rm -f -- "$up_file"
# shellcheck disable=SC2016 # the inner shell's words
set -- "$@" "$image" /bin/sh -c ': >"$0"; exec "$@"' "$up_file"
while [ "$count" -gt 0 ]; do
	set -- "$@" "$1"
	shift
	count=$((count - 1))
done
# The runtime's client is not marked as the run: a process it leaves behind for good (podman's
# rootless pause process) must not read as the run still running. The run's processes inside
# the container carry the marker.
unset RTRAIN_RUN_ID
watched=$$
(
	trap '' HUP INT
	while kill -0 "$watched" 2>/dev/null && [ ! -e "$up_file" ]; do sleep 1; done
	rm -f -- "$env_file" "$up_file"
) </dev/null >/dev/null 2>&1 &
exec "$runtime" "$@"
