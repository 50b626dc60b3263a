# Hashing and file identity: sha256 with whatever hasher the host has.

# True when an open descriptor can be opened again by its name /dev/fd/N (Linux, a BSD with
# fdescfs), as send.sh and receive.sh reach their hasher. `true`, not `:`: a failed
# redirection of a special built-in would end the whole script.
fd_by_name() {
	{ true >/dev/fd/4; } 4>/dev/null 2>/dev/null
}

# Hex sha256 of FILE on stdout, with whatever hasher the host has.
sha256_of() {
	# openssl first: it uses the CPU's SHA instructions, which coreutils' sha256sum does not
	# (three times as fast on a large file); but only one that hashes at all (FIPS builds).
	if have openssl && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then
		sh_digest=$(openssl dgst -sha256 -r <"$1") || return 1
	elif have sha256sum; then
		sh_digest=$(sha256sum <"$1") || return 1
	elif have shasum; then
		sh_digest=$(shasum -a 256 <"$1") || return 1
	else
		sh_py=
		for sh_candidate in python3 python; do
			if have "$sh_candidate"; then
				sh_py=$sh_candidate
				break
			fi
		done
		[ -n "$sh_py" ] || return 1
		sh_digest=$("$sh_py" -c 'import hashlib, sys
digest = hashlib.sha256()
for block in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
    digest.update(block)
print(digest.hexdigest())' <"$1") || return 1
	fi
	sh_digest=${sh_digest%%[ 	*]*}
	[ -n "$sh_digest" ] || return 1
	printf '%s\n' "$sh_digest"
}

# is_digest TEXT: true for 64 lowercase hex digits, a sha256 as the hashers print it.
is_digest() {
	case $1 in
	*[!0-9a-f]*) return 1 ;;
	esac
	[ "${#1}" = 64 ]
}

# split_sums TEXT: the lines a hashing pipeline printed -> TH_DIGEST, TH_OK (how many of its
# tools said `NAME 0`) and TH_NOTE (the tools' own words, for the daemon).
split_sums() {
	TH_DIGEST='' TH_OK=0 TH_NOTE=''
	set -f
	IFS=$NL
	for th_line in $1; do
		case $th_line in
		'tee 0' | 'cat 0') TH_OK=$((TH_OK + 1)) ;;
		'tee '* | 'cat '*) ;;
		*) if is_digest "$th_line"; then TH_DIGEST=$th_line; else TH_NOTE="$TH_NOTE$th_line "; fi ;;
		esac
	done
	unset IFS
	set +f
}

# keep_part PART DEST EXPECTED_SHA256 [DIGEST]: rename PART to DEST only if its sha256 (DIGEST,
# when the caller hashed it as it wrote) matches, then answer `ok SHA SIZE` and exit 0; on a
# mismatch PART is removed, `mismatch SHA SIZE`, exit 3.
keep_part() {
	if [ -n "${4-}" ]; then
		kp_digest=$4
	elif ! kp_digest=$(sha256_of "$1"); then
		rm -f -- "$1"
		fail "$E_WRITE" write "cannot hash the received file"
	fi
	kp_size=$(size_of "$1")
	if [ "$kp_digest" != "$3" ]; then
		rm -f -- "$1"
		say "sha256 mismatch for $2: got $kp_digest, expected $3"
		emit mismatch "$kp_digest" "$kp_size"
		exit "$E_MISMATCH"
	fi
	if ! kp_msg=$(mv -f -- "$1" "$2" 2>&1); then
		rm -f -- "$1"
		fail "$E_WRITE" write "$(flat "$kp_msg")"
	fi
	emit ok "$kp_digest" "$kp_size"
	exit 0
}

# file_state FILE: one line that moves whenever the content may have: device, inode, size, mtime (to the
# nanosecond where stat(1) tells it: GNU and busybox `-c`, BSD `-f`). Without either, `ls`
# gives the same with the mtime to the minute.
file_state() {
	stat -c '%d %i %s %y' -- "$1" 2>/dev/null ||
		stat -f '%d %i %z %Fm' -- "$1" 2>/dev/null ||
		ls -lnid -- "$1"
}

is_sha256() {
	case $1 in
	*[!0-9a-f]*) return 1 ;;
	esac
	[ "${#1}" = 64 ]
}
