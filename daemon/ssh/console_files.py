"""Files both ways over a console, without scp or sftp: checksummed chunks.

Each chunk is one console request (see console_session.py), so it carries its own sha256
both ways and is sent again when it arrives damaged; a chunk that keeps arriving damaged
fails the transfer. Chunks go over up to WINDOW consoles at once.

Uploads write `DEST.part` on the far side: the first chunk alone (it starts the file), the
middle ones at their offsets in any order (writing one twice is harmless), then the last
chunk alone with the whole file's sha256; the far side renames the part into place only when
that matches, as receive.sh does. Downloads read the file at offsets, with send.sh's path
checks, until a short chunk; the caller compares the sha256 computed here with the one the
far side listed. Nothing is reported done that was not verified.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import deque
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Protocol

from rtrain.protocol.errors import Kind, RpcError, app_error

from .console_framing import Request
from .transport import Completed, Progress

log = logging.getLogger(__name__)

# Raw bytes per chunk; base64 makes a third more on the wire. Damage halves the upload chunk
# down to MIN_CHUNK; every size is a multiple of MIN_CHUNK, the unit of the far side's dd.
UPLOAD_CHUNK = 1024 * 1024
DOWNLOAD_CHUNK = 2 * 1024 * 1024
MIN_CHUNK = 64 * 1024
WINDOW = 3
CHUNK_TIMEOUT = 60.0
# The last chunk waits for the far side to hash the whole file; allow it this many bytes/s.
HASH_RATE = 20e6

# put: DEST OFFSET SHA256|-, the chunk on stdin (already verified by the agent). OFFSET 0
# starts the part file afresh; others are written in place. With SHA256 the part is checked
# and renamed into place (answer `ok`, `mismatch` or `error`, as receive.sh), else the answer
# is `written<TAB>OFFSET`.
_PUT = r"""
need_args "$#" 3
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
offset=$2
expected=$(printf '%s' "$3" | tr 'A-F' 'a-f')
part=$dest.part
is_uint "$offset" || fail "$E_USAGE" usage
[ "$((offset % 65536))" = 0 ] || fail "$E_USAGE" usage
if [ -d "$dest" ]; then
	say "$dest is a directory"
	fail "$E_WRITE" write "destination is a directory"
fi
if [ "$offset" = 0 ]; then
	msg=$({ cat >"$part"; } 2>&1)
elif [ -f "$part" ]; then
	msg=$(dd of="$part" bs=65536 seek="$((offset / 65536))" conv=notrunc 2>&1)
else
	fail "$E_WRITE" write "the partial file $part is gone"
fi
# shellcheck disable=SC2181 # the status of the assignment above is the copy's
if [ "$?" != 0 ]; then
	rm -f -- "$part"
	say "$msg"
	fail "$E_WRITE" write "$(flat "$msg")"
fi
if [ "$expected" = - ]; then
	emit written "$offset"
	exit 0
fi
if ! digest=$(sha256_of "$part"); then
	rm -f -- "$part"
	fail "$E_WRITE" write "cannot hash the received file"
fi
size=$(size_of "$part")
if [ "$digest" != "$expected" ]; then
	rm -f -- "$part"
	say "sha256 mismatch for $dest: got $digest, expected $expected"
	emit mismatch "$digest" "$size"
	exit "$E_MISMATCH"
fi
if ! msg=$(mv -f -- "$part" "$dest" 2>&1); then
	rm -f -- "$part"
	fail "$E_WRITE" write "$(flat "$msg")"
fi
emit ok "$digest" "$size"
exit 0
"""

# get: RUN_DIR REL OFFSET LENGTH -> those bytes of the file, after send.sh's checks.
_GET = r"""
need_args "$#" 4
take_run_dir "$1"
[ -d "$RUN_DIR" ] || fail "$E_NOT_FOUND" run_not_found
REAL_RUN=$(real_path "$RUN_DIR") || fail "$E_NOT_FOUND" run_not_found
normalize_rel "$2"
target=$RUN_DIR${REL:+/$REL}
inside_run "$target"
case $? in
1) fail "$E_OUTSIDE" path_outside_run "$(flat "$2")" ;;
2) fail "$E_NOT_FOUND" not_found "$(flat "$2")" ;;
esac
[ -e "$target" ] || fail "$E_NOT_FOUND" not_found "$(flat "$2")"
[ -f "$target" ] || fail "$E_NOT_FOUND" not_a_file "$(flat "$2")"
is_uint "$3" && is_uint "$4" || fail "$E_USAGE" usage
# tail seeks in a regular file; the resolved path, so a swapped link cannot lead outside.
tail -c "+$(($3 + 1))" -- "$REAL_PATH" | head -c "$4"
"""


# drop: DEST -> DEST.part removed (an upload that failed leaves nothing behind).
_DROP = r"""
dest=$(expand_workdir "$1") || fail "$E_USAGE" bad_dest
rm -f -- "$dest.part"
"""
# After these, asking the host to clean up would only wait for the same failure again.
_UNREACHABLE = (Kind.HOST_UNREACHABLE, Kind.AUTH_FAILED, Kind.HOST_KEY_CHANGED)


@cache
def _far_script(body: str) -> str:
    common = (resources.files("rtrain.daemon.remote") / "scripts" / "common.sh").read_text()
    return common + "\n" + body


def put_script() -> str:
    return _far_script(_PUT)


def get_script() -> str:
    return _far_script(_GET)


class Channel(Protocol):
    """What the chunk loops need from the console transport."""

    alias: str

    @property
    def damaged(self) -> int:
        """Requests and answers that arrived damaged so far (and were sent again)."""
        ...

    async def execute(
        self, request: Request, timeout: float, what: str, *, idempotent: bool
    ) -> Completed: ...


async def upload(
    channel: Channel,
    local: Path,
    remote_path: str,
    sha256: str,
    progress: Progress | None,
    chunk_size: int = UPLOAD_CHUNK,
    window: int = WINDOW,
) -> int:
    """Ship `local` to `remote_path`; returns the chunk size that worked (smaller after
    damage, for the next file). On failure the far part file is removed where possible."""
    try:
        return await _upload_chunks(
            channel, local, remote_path, sha256, progress, chunk_size, window
        )
    except RpcError as error:
        if error.kind not in _UNREACHABLE:
            with contextlib.suppress(RpcError):
                await channel.execute(
                    Request.of(_far_script(_DROP), [remote_path], None),
                    CHUNK_TIMEOUT,
                    f"removing {local.name}.part",
                    idempotent=True,
                )
        raise


async def _upload_chunks(
    channel: Channel,
    local: Path,
    remote_path: str,
    sha256: str,
    progress: Progress | None,
    chunk_size: int = UPLOAD_CHUNK,
    window: int = WINDOW,
) -> int:
    size = local.stat().st_size
    what = f"shipping {local.name}"

    async def put(offset: int, length: int, final: bool) -> None:
        nonlocal chunk_size
        data = await asyncio.to_thread(_read_at, local, offset, length)
        damaged = channel.damaged
        done = await channel.execute(
            Request.of(put_script(), [remote_path, str(offset), sha256 if final else "-"], data),
            CHUNK_TIMEOUT + (size / HASH_RATE if final else 0),
            what,
            idempotent=True,
        )
        if channel.damaged > damaged and chunk_size > MIN_CHUNK:
            chunk_size = max(MIN_CHUNK, chunk_size // 2)
            log.info("%s: chunks arrive damaged; now %d bytes each", channel.alias, chunk_size)
        fields = done.fields()
        if not ("ok" in fields if final else fields.get("written") == [str(offset)]):
            _raise_for_failure(channel.alias, local, done)
        if progress and length:
            progress(length)

    if size <= chunk_size:
        await put(0, size, True)
        return chunk_size
    await put(0, chunk_size, False)
    offset = chunk_size
    pending: set[asyncio.Task[None]] = set()
    try:
        while size - offset > chunk_size or pending:
            while len(pending) < max(1, window) and size - offset > chunk_size:
                pending.add(asyncio.ensure_future(put(offset, chunk_size, False)))
                offset += chunk_size
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                task.result()
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    await put(offset, size - offset, True)
    return chunk_size


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as source:
        source.seek(offset)
        return source.read(length)


def _raise_for_failure(alias: str, local: Path, done: Completed) -> None:
    """The same errors as the exec transport's upload, from put's answer."""
    fields = done.fields()
    if "mismatch" in fields:
        raise app_error(
            Kind.TRANSFER_FAILED,
            f"{alias}: {local.name} arrived damaged (sha256 mismatch); nothing was kept. "
            "Try again.",
        )
    if "error" in fields and "No space" in " ".join(fields["error"]):
        raise app_error(
            Kind.DISK_FULL,
            f"{alias}: the disk is full; {local.name} was not shipped "
            f"({' '.join(fields['error'][1:])}).",
        )
    raise app_error(
        Kind.TRANSFER_FAILED,
        f"{alias}: shipping {local.name} failed: "
        f"{' '.join(fields.get('error', [])) or done.error_text}",
    )


async def download(
    channel: Channel,
    run_dir: str,
    rel: str,
    dest: Path,
    progress: Progress | None,
    chunk_size: int = DOWNLOAD_CHUNK,
    window: int = WINDOW,
) -> str:
    """Write far file `run_dir/rel` into `dest`; the sha256 of what arrived.

    `window` chunks are asked for at once (on as many consoles), so one console's transfer
    overlaps the far side's work on the next chunk; they are written in order.
    """

    async def chunk(offset: int) -> bytes:
        done = await channel.execute(
            Request.of(get_script(), [run_dir, rel, str(offset), str(chunk_size)], None),
            CHUNK_TIMEOUT,
            f"reading {rel}",
            idempotent=True,
        )
        if done.returncode != 0:
            raise app_error(
                Kind.TRANSFER_FAILED, f"{channel.alias}: reading {rel} failed: {done.error_text}"
            )
        return done.stdout

    digest = hashlib.sha256()
    asked = 0
    # The first chunk alone: most files fit in it, and then need one console only.
    in_flight = 1
    pending: deque[asyncio.Task[bytes]] = deque()
    try:
        with open(dest, "wb") as sink:
            while True:
                while len(pending) < in_flight:
                    pending.append(asyncio.ensure_future(chunk(asked)))
                    asked += chunk_size
                data = await pending.popleft()
                in_flight = max(1, window)
                sink.write(data)
                digest.update(data)
                if progress and data:
                    progress(len(data))
                if len(data) < chunk_size:
                    return digest.hexdigest()
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
