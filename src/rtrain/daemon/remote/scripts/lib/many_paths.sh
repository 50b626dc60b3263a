# rtrain-needs: hashing
# Many files at once (a tree's listing, a tree's stream): each tool runs once per few thousand
# paths instead of once per file. A LIST holds absolute paths, one per line (a name never holds
# a line break: the walks refuse it). Each helper prints one line per path, in LIST's order.

# each_path LIST CMD...: CMD with every path of LIST as its arguments, in as few runs as
# xargs can; fails where CMD failed for any of them or xargs cannot split on NUL.
each_path() {
	ep_list=$1
	shift
	[ -n "$ep_list" ] || return 0
	printf '%s\n' "$ep_list" | tr '\n' '\0' | xargs -0 "$@"
}

# per_path LIST FUNC: `FUNC PATH` for each path of LIST, `-` for one where it fails; the slow
# way, for a host whose batch tools fail (or a file that went away).
per_path() {
	pp_func=$2
	set -f
	IFS=$NL
	for pp_path in $1; do
		unset IFS
		"$pp_func" "$pp_path" || printf '%s\n' -
		IFS=$NL
	done
	unset IFS
	set +f
}

# sizes_of LIST: each file's size in bytes (following links).
sizes_of() {
	if so_out=$(each_path "$1" stat -L -c %s 2>/dev/null) ||
		so_out=$(each_path "$1" stat -L -f %z 2>/dev/null); then
		[ -z "$so_out" ] || printf '%s\n' "$so_out"
	else
		per_path "$1" size_of
	fi
}

# states_of LIST: each file's file_state line (following links).
states_of() {
	if so_out=$(each_path "$1" stat -L -c '%d %i %s %y' 2>/dev/null) ||
		so_out=$(each_path "$1" stat -L -f '%d %i %z %Fm' 2>/dev/null); then
		[ -z "$so_out" ] || printf '%s\n' "$so_out"
	else
		per_path "$1" file_state
	fi
}

# file_ids LIST: each file's `DEVICE:INODE` (following links); fails where a path has none.
file_ids() {
	each_path "$1" stat -L -c '%d:%i' 2>/dev/null || each_path "$1" stat -L -f '%d:%i' 2>/dev/null
}

# hashes_of LIST: each file's hex sha256, with the batch form of the hasher sha256_of picks.
hashes_of() {
	ho_out=
	if have openssl && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then
		ho_out=$(each_path "$1" openssl dgst -sha256 -r 2>/dev/null) || ho_out=
	elif have sha256sum; then
		ho_out=$(each_path "$1" sha256sum 2>/dev/null) || ho_out=
	elif have shasum; then
		ho_out=$(each_path "$1" shasum -a 256 2>/dev/null) || ho_out=
	fi
	if [ -n "$ho_out" ]; then
		# `DIGEST *PATH` or `DIGEST  PATH`; coreutils puts a backslash first when it escaped
		# the name.
		printf '%s\n' "$ho_out" | sed 's/^\\//; s/[ *].*$//'
	elif [ -n "$1" ]; then
		per_path "$1" sha256_of
	fi
}
