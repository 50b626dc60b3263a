# container_check.sh RUNTIME IMAGE GPUS: what preflight --image says of the host's container
# runtime (docs/containers.md). RUNTIME is auto (the first of podman, docker, apptainer,
# singularity the host has) or one of them. Prints `runtime NAME VERSION` (or `runtime none`),
# then, where there is one, `image present`, `image missing` or `image remote` (an Apptainer
# URI, pulled when a run starts), then, with GPUS > 0 and the image present, `gpus N` (how
# many the image sees through the runtime's GPU devices) or `gpus unseen WHY`.
need_args "$#" 3
runtime=$1
image=$2
gpus=$3
case $runtime in
auto)
	runtime=
	for cc_try in podman docker apptainer singularity; do
		if command -v "$cc_try" >/dev/null 2>&1; then
			runtime=$cc_try
			break
		fi
	done
	;;
podman | docker | apptainer | singularity) command -v "$runtime" >/dev/null 2>&1 || runtime= ;;
*) fail "$E_USAGE" usage ;;
esac
case $gpus in
'' | *[!0-9]*) fail "$E_USAGE" usage ;;
esac
if [ -z "$runtime" ]; then
	emit runtime none
	exit 0
fi
version=$("$runtime" --version 2>/dev/null | head -n 1)
emit runtime "$runtime" "$(flat "$version")"
case $runtime in
apptainer | singularity)
	case $image in
	*://*)
		emit image remote
		exit 0
		;;
	esac
	# An Apptainer image is a file (a .sif) or a sandbox directory.
	if [ ! -e "$image" ]; then
		emit image missing
		exit 0
	fi
	set -- exec --nv "$image"
	;;
*)
	if ! "$runtime" image inspect "$image" >/dev/null 2>&1; then
		emit image missing
		exit 0
	fi
	if [ "$runtime" = docker ]; then
		set -- run --rm --network host --gpus all "$image"
	else
		set -- run --rm --network host --device nvidia.com/gpu=all "$image"
	fi
	;;
esac
emit image present
[ "$gpus" -gt 0 ] || exit 0
if seen=$("$runtime" "$@" nvidia-smi -L 2>&1); then
	count=$(printf '%s\n' "$seen" | grep -c '^GPU ')
	emit gpus "$count"
else
	emit gpus unseen "$(flat "$(printf '%s' "$seen" | tail -n 1)")"
fi
