# env_check.sh WORKDIR PYTHON LOCK_NAME: builds the environment of a lock ahead of any run, or
# finds it built (preflight --requirements). Stdin: the lengths in bytes of the builder and of
# the pyproject.toml (0 for a requirements file), a newline, the builder (env_build.py), the
# pyproject.toml, then the lock, written as LOCK_NAME (rtrain-requirements.txt or
# rtrain-uv.lock). The builder runs as in a run, in a scratch folder of the environments'
# place (removed after), and execs `true` where a run execs its trainer.
# Prints `built KEY SECONDS TOOL`, `ready KEY`, or `failed WHY` (the lock's line).
need_args "$#" 3
case $3 in
rtrain-requirements.txt | rtrain-uv.lock) lock_name=$3 ;;
*) fail "$E_USAGE" usage "no such kind of lock: $3" ;;
esac
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
# shellcheck disable=SC2088 # the word as typed: expand_workdir expands it
case $2 in
'~' | '~/'*) python_cmd=$(expand_workdir "$2") || fail "$E_USAGE" bad_python ;;
*) python_cmd=$2 ;;
esac
envs=${workdir%/}/.cache/envs
# shellcheck disable=SC2174 # the workdir exists (preflight made it); only the cache is new
mkdir -p -m 700 -- "$envs" 2>/dev/null || fail "$E_IO" mkdir "cannot make $envs"
scratch=$envs/.check-$$
mkdir -m 700 -- "$scratch" || fail "$E_IO" mkdir "cannot make $scratch"
trap 'rm -rf -- "$scratch"' EXIT
cd -- "$scratch" || fail "$E_IO" cd "cannot enter $scratch"
# shellcheck disable=SC2016 # python's text
"$python_cmd" -c '
import sys
data = sys.stdin.buffer.read()
sizes, _, rest = data.partition(b"\n")
builder, project = (int(size) for size in sizes.split())
with open("rtrain-env", "wb") as f:
    f.write(rest[:builder])
if project:
    with open("rtrain-pyproject.toml", "wb") as f:
        f.write(rest[builder : builder + project])
with open(sys.argv[1], "wb") as f:
    f.write(rest[builder + project :])
' "$lock_name" || fail "$E_IO" write "cannot write the lock with $2"
"$python_cmd" ./rtrain-env "$workdir" "$lock_name" true >build.log 2>&1
if [ -f env_failed ]; then
	IFS= read -r why <env_failed
	emit failed "$why"
	exit 0
fi
while IFS= read -r line; do
	case $line in
	'rtrain: environment '*' built in '*' s with '*)
		rest=${line#'rtrain: environment '}
		key=${rest%%' '*}
		rest=${rest#*' built in '}
		emit built "$key" "${rest%%' '*}" "${rest##*' with '}"
		exit 0
		;;
	'rtrain: environment '*' is ready '*)
		rest=${line#'rtrain: environment '}
		emit ready "${rest%%' '*}"
		exit 0
		;;
	esac
done <build.log
say "the environment's builder said: $(flat "$(tail -n 3 build.log)")"
fail "$E_IO" environment "the builder ended without a word"
