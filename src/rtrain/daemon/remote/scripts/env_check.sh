# env_check.sh WORKDIR PYTHON: builds the environment of a lock ahead of any run, or finds it
# built (preflight --requirements). Stdin: the builder's length in bytes, a newline, the
# builder (env_build.py), then the lock. The builder runs as in a run, in a scratch folder of
# the environments' place (removed after), and execs `true` where a run execs its trainer.
# Prints `built KEY SECONDS TOOL`, `ready KEY`, or `failed WHY` (the lock's line).
need_args "$#" 2
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
size, _, rest = data.partition(b"\n")
with open("rtrain-env", "wb") as f:
    f.write(rest[: int(size)])
with open("rtrain-requirements.txt", "wb") as f:
    f.write(rest[int(size):])
' || fail "$E_IO" write "cannot write the lock with $2"
"$python_cmd" ./rtrain-env "$workdir" rtrain-requirements.txt true >build.log 2>&1
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
