RT_M=$(printf '\122\124'):@TOKEN@
RT_E=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
RT_SEQ=
RT_RC=0
RT_HO=$RT_E
RT_HE=$RT_E
umask 077

rt_mark() {
    printf '\n%s:%s\n' "$RT_M" "$1"
}

rt_py=
for rt_c in python3 python; do
    if command -v "$rt_c" >/dev/null 2>&1; then
        rt_py=$rt_c
        break
    fi
done

# sha256 and base64 with whatever this host has.
if command -v sha256sum >/dev/null 2>&1; then
    rt_sha_of() { sha256sum; }
elif command -v shasum >/dev/null 2>&1; then
    rt_sha_of() { shasum -a 256; }
elif command -v openssl >/dev/null 2>&1; then
    rt_sha_of() { openssl dgst -sha256 -r; }
elif [ -n "$rt_py" ]; then
    rt_sha_of() {
        "$rt_py" -c 'import hashlib, sys
print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'
    }
else
    rt_mark "0:X:no sha256 tool (sha256sum, shasum, openssl or python)"
    exit 1
fi
if command -v base64 >/dev/null 2>&1; then
    rt_enc() { base64; }
    rt_dec() { base64 -d; }
elif command -v openssl >/dev/null 2>&1; then
    rt_enc() { openssl base64; }
    rt_dec() { openssl base64 -d; }
elif [ -n "$rt_py" ]; then
    rt_enc() {
        "$rt_py" -c 'import base64, sys
sys.stdout.buffer.write(base64.encodebytes(sys.stdin.buffer.read()))'
    }
    rt_dec() {
        "$rt_py" -c 'import base64, sys
sys.stdout.buffer.write(base64.b64decode(sys.stdin.buffer.read()))'
    }
else
    rt_mark "0:X:no base64 tool (base64, openssl or python)"
    exit 1
fi
# N -> exactly N bytes from the terminal, never one more (a read past them would swallow the
# next request). GNU head asks for no more than is left; busybox head reads ahead.
if head --version 2>/dev/null | grep -q GNU; then
    rt_read() { head -c "$1"; }
elif dd bs=1 count=1 iflag=fullblock </dev/null >/dev/null 2>&1; then
    rt_read() { dd bs="$1" count=1 iflag=fullblock 2>/dev/null; }
elif [ -n "$rt_py" ]; then
    rt_read() {
        "$rt_py" -c 'import os, sys
left = int(sys.argv[1])
while left:
    data = os.read(0, min(left, 65536))
    if not data:
        break
    left -= len(data)
    while data:
        data = data[os.write(1, data):]' "$1"
    }
else
    rt_mark "0:X:no exact reader (GNU head, dd iflag=fullblock or python)"
    exit 1
fi
if ! printf 'cnQ=\n' | rt_dec 2>/dev/null | grep -q rt; then
    rt_mark "0:X:base64 cannot decode here"
    exit 1
fi

RT_T=$(mktemp -d "${TMPDIR:-/tmp}/rtrain-console.XXXXXX" 2>/dev/null) || {
    RT_T=${TMPDIR:-/tmp}/rtrain-console.$$
    mkdir -m 700 "$RT_T" 2>/dev/null
} || {
    rt_mark "0:X:cannot create a temporary directory"
    exit 1
}
trap 'rm -rf "$RT_T"' EXIT
# The console hung up (the daemon gave it up): stop the running command and what it started
# in this process group (a detached run has a session of its own), then leave.
rt_stop() {
    trap '' HUP INT TERM
    kill -HUP 0 2>/dev/null
    exit 129
}
trap rt_stop HUP INT TERM

# FILE -> RT_H, its sha256 in hex.
rt_sha() {
    if [ -s "$1" ]; then
        RT_H=$(rt_sha_of <"$1") || RT_H=-
        RT_H=${RT_H%%[!0-9a-f]*}
    else
        RT_H=$RT_E
    fi
}

# LEN SHA: read a block of LEN bytes of base64 from the terminal into RT_B and check its
# sha256; RT_OK=0 when it is not intact. Always reads the whole block. Blocks stay in
# memory, never in a file: stdin may hold secrets.
rt_block() {
    RT_B=
    RT_H=$RT_E
    if [ "$1" -gt 0 ]; then
        RT_B=$(rt_read "$1") || RT_OK=0
        RT_H=$(printf '%s' "$RT_B" | rt_sha_of) || RT_OK=0
        RT_H=${RT_H%%[!0-9a-f]*}
    fi
    [ "$RT_H" = "$2" ] || RT_OK=0
}

rt_hex() {
    case $1 in
    '' | *[!0-9a-f]*) return 1 ;;
    esac
    [ "${#1}" -eq 64 ]
}

rt_answer() {
    rt_mark "$RT_SEQ:O"
    [ -s "$RT_T/o" ] && rt_enc <"$RT_T/o"
    rt_mark "$RT_SEQ:E"
    [ -s "$RT_T/e" ] && rt_enc <"$RT_T/e"
    rt_mark "$RT_SEQ:Z:$RT_RC:$RT_HO:$RT_HE"
}

rt_request() {
    [ "$#" -eq 8 ] || return 0
    for rt_n in "$2" "$4" "$6" "$8"; do
        case $rt_n in
        '' | *[!0-9]*) return 0 ;;
        esac
    done
    for rt_n in "$3" "$5" "$7"; do
        rt_hex "$rt_n" || return 0
    done
    RT_OK=1
    if [ "$4" -gt 0 ]; then
        rt_block "$4" "$3"
        if [ "$RT_OK" = 1 ]; then
            printf '%s\n' "$RT_B" | rt_dec >"$RT_T/s" && mv -f "$RT_T/s" "$RT_T/c-$3"
        fi
    fi
    rt_block "$6" "$5"
    RT_A=$(printf '%s\n' "$RT_B" | rt_dec)
    rt_block "$8" "$7"
    RT_I=$RT_B
    RT_B=
    if [ "$RT_OK" != 1 ]; then
        rt_mark "$2:B"
        return 0
    fi
    if [ ! -f "$RT_T/c-$3" ]; then
        rt_mark "$2:M"
        return 0
    fi
    rt_mark "$2:K"
    RT_SEQ=$2
    RT_S=$RT_T/c-$3
    # Exactly `sh -c SCRIPT rtrain ARGS...` in the home directory with stdin from a pipe, as
    # over an exec channel; the terminal is neither its stdin nor its stdout. In the
    # background only so that `wait`, unlike a foreground command, lets rt_stop run at once
    # on a hangup.
    {
        [ -n "$RT_I" ] && printf '%s\n' "$RT_I" | rt_dec
    } 2>/dev/null | (
        cd "$HOME" 2>/dev/null || cd /
        eval "set -- $RT_A"
        exec sh -c "$(cat "$RT_S")" rtrain "$@"
    ) >"$RT_T/o" 2>"$RT_T/e" &
    wait "$!"
    RT_RC=$?
    RT_I=
    rt_sha "$RT_T/o"
    RT_HO=$RT_H
    rt_sha "$RT_T/e"
    RT_HE=$RT_H
    rt_answer
}

rt_mark "0:Y"
while rt_line=$(rt_read @HEADER@) && [ -n "$rt_line" ]; do
    set -f
    # shellcheck disable=SC2086 # split into its words on purpose, globbing off
    set -- $rt_line
    set +f
    case ${1-} in
    Q) rt_request "$@" ;;
    E) exit 0 ;;
    A)
        if [ -n "$RT_SEQ" ] && [ "${2-}" = "$RT_SEQ" ]; then
            rt_answer
        else
            case ${2-} in
            '' | *[!0-9]*) ;;
            *) rt_mark "$2:G" ;;
            esac
        fi
        ;;
    esac
done
