# The part of the far-side library every script gets, first (daemon/remote/__init__.py): known
# state, the exit codes, the output protocol and argument checks. Each operation's script
# names the other libraries it needs on its `# rtrain-needs:` line.
# Output protocol: tab-separated `key<TAB>value...` lines on stdout; messages for humans on stderr.

# Start from known state: none of these may be inherited from the caller's environment.
unset CDPATH GREP_OPTIONS
TAB=$(printf '\t')
NL='
'
# Files of rtrain's own are private; the trainer gets the caller's umask back (launch.sh).
CALLER_UMASK=$(umask)
umask 077

# Exit codes shared by all scripts (docs/remote-scripts.md lists them).
E_USAGE=2
E_MISMATCH=3
E_WRITE=4
E_REFUSED=5
E_SURVIVED=6
E_OUTSIDE=7
E_NOT_FOUND=8
E_BAD_NAME=9
E_BAD_SECRET=10
E_NO_DETACH=11
E_LAUNCH_TIMEOUT=12
E_IO=14
E_ALREADY_LAUNCHED=15
E_RUN_EXISTS=17
E_GPUS_BUSY=18
E_SCHEDULER=20
E_NOT_A_RUN=21

# One protocol line: the first argument is the key, the rest are tab-separated fields.
emit() {
	printf '%s' "$1"
	shift
	for emit_field in "$@"; do
		printf '\t%s' "$emit_field"
	done
	printf '\n'
}

say() {
	printf 'rtrain: %s\n' "$*" >&2
}

# A message fit for one protocol field: tabs and line breaks become spaces.
flat() {
	printf '%s' "$1" | tr '\t\r\n' '   '
}

# `error<TAB>KIND<TAB>...` on stdout, then exit with CODE.
fail() {
	fail_code=$1
	shift
	emit error "$@"
	exit "$fail_code"
}

have() {
	command -v "$1" >/dev/null 2>&1
}

is_uint() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

valid_run_id() {
	case $1 in
	'' | [!A-Za-z0-9]* | *[!A-Za-z0-9._-]*) return 1 ;;
	esac
	[ "${#1}" -le 64 ]
}

# WORKDIR (or any far-side path the daemon sends) -> absolute path on stdout.
# `~` and `~/...` mean $HOME; a relative path is relative to $HOME (ssh starts there).
# `~user` is not supported: returns 1.
expand_workdir() {
	ew_home=${HOME%/}
	# shellcheck disable=SC2088 # the word as typed, tilde and all: expanded here
	case $1 in
	'') return 1 ;;
	'~') ew_path=$ew_home/ ;;
	'~/'*) ew_path=$ew_home/${1#??} ;;
	'~'*) return 1 ;;
	/*) ew_path=$1 ;;
	*) ew_path=$ew_home/$1 ;;
	esac
	case $1 in
	/*) ;;
	*) [ -n "$HOME" ] || return 1 ;;
	esac
	while :; do
		case $ew_path in
		/) break ;;
		*/) ew_path=${ew_path%/} ;;
		*) break ;;
		esac
	done
	printf '%s\n' "$ew_path"
}

# Byte size of FILE on stdout.
size_of() {
	so_size=$(wc -c <"$1") || return 1
	so_size=${so_size##*[ 	]}
	printf '%s\n' "$so_size"
}

# The kernel's boot id, or an empty line where there is none.
boot_id() {
	bi_value=
	if [ -r /proc/sys/kernel/random/boot_id ]; then
		{ IFS= read -r bi_value </proc/sys/kernel/random/boot_id; } 2>/dev/null
	fi
	printf '%s\n' "$bi_value"
}

# Canonical path of an existing (or dangling-link) path on stdout.
real_path() {
	if have readlink && readlink -f -- / >/dev/null 2>&1; then
		readlink -f -- "$1"
	elif have realpath; then
		realpath -- "$1"
	else
		return 1
	fi
}

need_args() {
	if [ "$1" -lt "$2" ]; then
		say "expected at least $2 arguments, got $1"
		fail "$E_USAGE" usage
	fi
}
