# rtrain-container RUNTIME IMAGE RUN_ID NAMES CMD...: runs CMD (the run's steps: the setup,
# then the trainer) inside IMAGE, in the run dir, and exits with the container's exit code.
# Shipped into the run dir and run by the run's wrapper, after the GPU gate, so the claimed
# GPUs are in CUDA_VISIBLE_DEVICES. RUNTIME is auto, podman or docker; NAMES is the run's
# variables (env and secrets) by name, comma-separated: their values reach the container from
# this process's environment (`--env NAME`), never on a command line.
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
IFS=,
# shellcheck disable=SC2086 # validated variable names, split on commas on purpose
for name in $names; do
	set -- "$@" --env "$name"
done
IFS=$old_ifs
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
set -- "$@" "$image"
while [ "$count" -gt 0 ]; do
	set -- "$@" "$1"
	shift
	count=$((count - 1))
done
# The runtime's client is not marked as the run: a process it leaves behind for good (podman's
# rootless pause process) must not read as the run still running. The run's processes inside
# the container carry the marker.
unset RTRAIN_RUN_ID
exec "$runtime" "$@"
