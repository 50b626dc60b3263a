# rtrain-needs: hashing
# fit.sh WORKDIR PYTHON NEEDS RUNTIME IMAGE [SHA256 SIZE]...
# Whether this host can run one run now, and what it holds of it already: the cheap part of
# preflight that a pool's placement asks of every host (docs/pools.md).
#   PYTHON  the run's python (`~/` is the far user's home); NEEDS: `-` (the run runs no
#           python of the host), `python` (it must start), `torch` (it must find torch).
#   IMAGE   `-`, or the image the run runs in under RUNTIME (auto|podman|docker), which must
#           be in the runtime's local store (rtrain pulls nothing).
#   inputs  (sha256, size) of the run's largest inputs, looked up in the input cache.
# Stdin: empty, or the builder's length, a newline, the builder (env_build.py), then the
# run's lock: the environment's key is computed by the builder's own code with PYTHON.
# Prints `unfit WHY` for each thing that keeps the run off this host, `cached N BYTES` (inputs
# the cache holds), `free_kib N` (free space where runs go), and `env KEY 1|0` (built or not).
need_args "$#" 5
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
# shellcheck disable=SC2088 # the word as typed: expand_workdir expands it
case $2 in
'~' | '~/'*) python_cmd=$(expand_workdir "$2") || fail "$E_USAGE" bad_python ;;
*) python_cmd=$2 ;;
esac
python_word=$(flat "$2")
needs=$3
runtime=$4
image=$5
shift 5
case $needs in
- | python | torch) ;;
*) fail "$E_USAGE" usage "NEEDS must be -, python or torch" ;;
esac

cached=0 cached_bytes=0
while [ "$#" -ge 2 ]; do
	{ is_sha256 "$1" && is_uint "$2"; } || fail "$E_USAGE" usage
	entry=$workdir/.cache/inputs/$1
	if [ -f "$entry" ] && [ "$(size_of "$entry")" = "$2" ]; then
		cached=$((cached + 1))
		cached_bytes=$((cached_bytes + $2))
	fi
	shift 2
done
emit cached "$cached" "$cached_bytes"

# Free space where the run would go: the workdir, or the nearest folder above it that is.
place=$workdir
while [ ! -d "$place" ] && [ "$place" != / ]; do
	place=$(dirname -- "$place")
done
free_kib=$(df -Pk -- "$place" 2>/dev/null | awk 'NR == 2 { print $4 }')
is_uint "$free_kib" && emit free_kib "$free_kib"

if [ "$image" != - ]; then
	case $runtime in
	auto) found= && for rt in podman docker; do have "$rt" && found=$rt && break; done ;;
	podman | docker) found= && have "$runtime" && found=$runtime ;;
	*) fail "$E_USAGE" usage "RUNTIME must be auto, podman or docker" ;;
	esac
	if [ -z "$found" ]; then
		[ "$runtime" = auto ] && runtime="podman or docker"
		emit unfit "no $runtime to run image $(flat "$image") in"
	elif ! "$found" image inspect -- "$image" >/dev/null 2>&1; then
		emit unfit "image $(flat "$image") is not in $found's local store"
	fi
fi

[ "$needs" = - ] && exit 0
# One python start finds torch (without importing it: seconds on a busy host) and the key.
# shellcheck disable=SC2016 # python's text
probe='
import importlib.util, os, sys
if sys.argv[2] == "torch" and importlib.util.find_spec("torch") is None:
    print("notorch")
data = sys.stdin.buffer.read()
if data:
    size, _, rest = data.partition(b"\n")
    builder = {"__name__": "rtrain_env"}
    exec(compile(rest[: int(size)], "rtrain-env", "exec"), builder)
    key = builder["environment_key"](rest[int(size):])
    print("env", key, int(os.path.isdir(os.path.join(sys.argv[1], ".cache", "envs", key))))
'
answer=$("$python_cmd" -c "$probe" "$workdir" "$needs" 2>&1)
status=$?
if [ "$status" -eq 127 ]; then
	emit unfit "$python_word is not found"
	exit 0
elif [ "$status" -ne 0 ]; then
	why=$(printf '%s\n' "$answer" | tail -n 1 | cut -c 1-200)
	emit unfit "$python_word does not run ($(flat "${why:-exit status $status}"))"
	exit 0
fi
printf '%s\n' "$answer" | while read -r word key built; do
	case $word in
	notorch) emit unfit "$python_word has no torch" ;;
	env) emit env "$key" "$built" ;;
	esac
done
exit 0
