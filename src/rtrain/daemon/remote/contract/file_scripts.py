"""Files of a run and of the host's input cache: input_tree.sh, list_files.sh, the
transfers' scripts (receive, send, put_range, send_range, cache_place, seal_input,
file_state, hash_ranges, send_tree, receive_tree) and gc_cache.sh, each answer decoded here."""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence

import msgspec

from rtrain.daemon.remote.error_words import ErrorWord, FarError, far_error

from .answers import Answer, Completed, Exit, Lines, Runner, as_int

log = logging.getLogger(__name__)


# ---- input_tree.sh ------------------------------------------------------------------------


class Shaped(Answer, frozen=True, kw_only=True):
    """The run dir has the directories and modes asked for (`ok`), or why not (`error`)."""

    ok: bool
    error: FarError | None


async def input_tree(
    transport: Runner,
    run_dir: str,
    run_id: str,
    dirs: Sequence[str],
    executables: Sequence[str],
    links: Sequence[tuple[str, str]] = (),
) -> Shaped:
    """Make `dirs` (relative, parents first) in the run dir, give `executables` their
    owner's x bit, and make each (path, target) of `links` a symbolic link; the paths travel
    on stdin, one a line."""
    steps = [f"d\t{rel}\n" for rel in dirs] + [f"x\t{rel}\n" for rel in executables]
    steps += [f"l\t{rel}\t{target}\n" for rel, target in links]
    done = await transport.run(
        "input_tree", [run_dir, run_id], stdin="".join(steps).encode(), timeout=60
    )
    lines = Lines(done.stdout)
    return Shaped(
        ok=done.returncode == Exit.OK and "ok" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- list_files.sh -----------------------------------------------------------------------


class ListedFile(msgspec.Struct, frozen=True):
    size: int
    # None when the listing was asked not to hash (send.sh hashes as it sends).
    sha256: str | None
    path: str


class Listing(Answer, frozen=True, kw_only=True):
    """Every regular file at or under the path, and empty directories; or, in `error`, the
    words of the `error` line (`path_outside_run`, `not_found`, `run_not_found`, ...)."""

    files: list[ListedFile]
    dirs: list[str]
    error: FarError | None


async def list_files(transport: Runner, run_dir: str, rel: str, hashed: bool) -> Listing:
    args = [run_dir, rel] if hashed else [run_dir, rel, "none"]
    done = await transport.run("list_files", args, timeout=300)
    lines = Lines(done.stdout)
    errors = lines.rows("error")
    return Listing(
        files=[
            ListedFile(int(size), None if sha == "-" else sha, path)
            for size, sha, path in (row[:3] for row in lines.rows("file") if len(row) >= 3)
        ],
        dirs=[row[0] for row in lines.rows("dir") if row],
        error=far_error(errors[0]) if errors else None,
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- what the transports run themselves ---------------------------------------------------


class Received(msgspec.Struct, frozen=True):
    """receive.sh's or put_chunk.sh's answer: the file kept (`ok`), a chunk written (at
    `written`), or why not."""

    ok: bool
    written: int | None
    mismatch: bool
    error: FarError | None


def received(done: Completed) -> Received:
    lines = Lines(done.stdout)
    return Received(
        ok="ok" in lines,
        written=as_int(lines.value("written")),
        mismatch="mismatch" in lines,
        error=lines.error(),
    )


class Sent(msgspec.Struct, frozen=True):
    """send.sh's verdict on stderr: the sha256 of the bytes it sent, or `changed` (the file
    moved while it was read)."""

    sha256: str | None
    changed: bool


def sent(done: Completed) -> Sent:
    lines = Lines(done.stderr)
    return Sent(sha256=lines.value("sent"), changed="changed" in lines)


class Hashed(msgspec.Struct, frozen=True):
    size: int
    sha256: str


def hashed(done: Completed) -> Hashed | None:
    """hash_file.sh's `file SIZE SHA256`; None unless it said exactly that."""
    rows = Lines(done.stdout).rows("file")
    if done.returncode != Exit.OK or len(rows) != 1 or len(rows[0]) != 2:
        return None
    size = as_int(rows[0][0])
    return None if size is None else Hashed(size, rows[0][1])


# ---- transfers: the input cache, pieces, file states (daemon/transfer/) -------------------


class Placed(msgspec.Struct, frozen=True, kw_only=True):
    """cache_place.sh's answer: each input placed from the cache (name -> `copied`: the
    run's own copy or reflink; one `placed_all COUNT` line for every input not named
    `missing`, where none failed), and for
    each other one the offsets of the pieces a cut upload left verified."""

    placed: dict[str, str]
    pieces: dict[str, set[int]]
    error: FarError | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.error is None


async def cache_place(
    transport: Runner, workdir: str, run_dir: str, inputs: Sequence[tuple[str, int, str]]
) -> Placed:
    """Place every input (sha256, size, name) the host's cache holds into `run_dir`; the list
    travels on stdin, a line each."""
    done = await transport.run(
        "cache_place", [workdir, run_dir], stdin=cache_listing(inputs), timeout=120
    )
    return placed_answer(done, inputs)


def cache_listing(inputs: Sequence[tuple[str, int, str]]) -> bytes:
    """cache_place.sh's stdin (prepare.sh's with `place`): a line per (sha256, size, name)."""
    return "".join(f"{sha}\t{size}\t{name}\n" for sha, size, name in inputs).encode()


def placed_answer(done: Completed, inputs: Sequence[tuple[str, int, str]]) -> Placed:
    """cache_place.sh's lines (also what prepare.sh prints after `run_dir` with `place`)."""
    lines = Lines(done.stdout)
    pieces: dict[str, set[int]] = {}
    for row in lines.rows("piece"):
        offset = as_int(row[1]) if len(row) >= 3 else None
        if offset is not None:
            pieces.setdefault(row[0], set()).add(offset)
    placed = {row[0]: row[1] for row in lines.rows("placed") if len(row) >= 2}
    every = lines.last("placed_all")
    missing = {row[0] for row in lines.rows("missing") if row}
    others = [name for _, _, name in inputs if name not in missing]
    if every and as_int(every[0]) == len(others):
        placed = {name: "copied" for name in others}
    return Placed(
        placed=placed,
        pieces=pieces,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class SmallPut(msgspec.Struct, frozen=True, kw_only=True):
    """put_small.sh's answer: the inputs placed (name -> `copied`), those whose bytes were
    not their sha256 (`mismatched`), or why not (`error`; `no_python`: the host cannot)."""

    placed: dict[str, str]
    mismatched: list[str]
    error: FarError | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.error is None and not self.mismatched

    @property
    def no_python(self) -> bool:
        return self.error is not None and self.error.word == ErrorWord.NO_PYTHON


async def put_small(
    transport: Runner, workdir: str, run_dir: str, files: Sequence[tuple[str, str, bytes]]
) -> SmallPut:
    """Each (sha256, name, bytes) into the host's cache and placed in `run_dir`, verified
    there; as text on stdin (a line each, the bytes in base64), so a long-lived shell carries
    it in one round trip."""
    text = "".join(
        f"{sha}\t{len(data)}\t{name}\n{base64.b64encode(data).decode()}\n"
        for sha, name, data in files
    )
    done = await transport.run("put_small", [workdir, run_dir], stdin=text.encode(), timeout=120)
    lines = Lines(done.stdout)
    return SmallPut(
        placed={row[0]: row[1] for row in lines.rows("placed") if len(row) >= 2},
        mismatched=[row[0] for row in lines.rows("mismatch") if row],
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class Stored(msgspec.Struct, frozen=True, kw_only=True):
    """put_range.sh's or seal_input.sh's answer: the piece kept, the input placed (`linked`,
    `copied`), the bytes not the expected ones (`mismatch`), or why not (`error`)."""

    piece: bool
    # The offset of each piece kept (several when one stream carried several pieces).
    offsets: frozenset[int] = frozenset()
    placed: str | None
    mismatch: bool
    error: FarError | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.error is None and not self.mismatch


def stored(done: Completed) -> Stored:
    lines = Lines(done.stdout)
    placed = lines.last("placed")
    error = lines.error()
    said_mismatch = error is not None and error.word == ErrorWord.MISMATCH
    return Stored(
        piece="piece" in lines,
        offsets=frozenset(
            offset for row in lines.rows("piece") if (offset := as_int(row[0])) is not None
        ),
        placed=placed[1] if placed and len(placed) >= 2 else None,
        mismatch="mismatch" in lines or said_mismatch,
        error=None if said_mismatch else error,
        exit=done.returncode,
        error_text=done.error_text,
    )


async def seal_input(
    transport: Runner, workdir: str, sha: str, size: int, run_dir: str, name: str, timeout: float
) -> Stored:
    done = await transport.run(
        "seal_input", [workdir, sha, str(size), run_dir, name], timeout=timeout
    )
    return stored(done)


class FileState(msgspec.Struct, frozen=True, kw_only=True):
    """file_state.sh's answer: the file's size and state line (device, inode, size, mtime),
    with `sha256` its whole hash if asked for; `changed` when it moved while hashed."""

    size: int | None
    state: str | None
    sha256: str | None
    changed: bool
    error: FarError | None
    exit: int
    error_text: str


async def file_state(
    transport: Runner, run_dir: str, rel: str, *, hashed: bool = False, timeout: float = 60
) -> FileState:
    args = [run_dir, rel, "sha256"] if hashed else [run_dir, rel]
    done = await transport.run("file_state", args, timeout=timeout)
    lines = Lines(done.stdout)
    state = lines.last("state")
    error = lines.error()
    return FileState(
        size=as_int(state[0]) if state else None,
        state="\t".join(state[1:]) if state and len(state) > 1 else None,
        sha256=lines.value("sha256"),
        changed=error is not None and error.word == ErrorWord.CHANGED,
        error=error,
        exit=done.returncode,
        error_text=done.error_text,
    )


class TreeSent(msgspec.Struct, frozen=True, kw_only=True):
    """send_tree.sh's verdict on stderr: per file, in the order asked, whether it is the
    bytes sent (its states before and after agree) and their far sha256; `count` None when
    the script never got to the end (then no file is vouched for)."""

    held: list[bool]
    sizes: list[int | None]  # each file's size when it was read, by its state
    sha256: list[str]
    count: int | None
    error: list[str] | None


def tree_sent(done: Completed) -> TreeSent:
    lines = Lines(done.stderr)
    before = [" ".join(row) for row in lines.rows("state")]
    after = [" ".join(row) for row in lines.rows("after")]
    digests = [row[0] if row else "" for row in lines.rows("sha256")]
    count = as_int(lines.value("sent"))
    if (
        done.returncode != Exit.OK
        or count is None
        or not (len(before) == len(after) == len(digests) == count)
    ):
        return TreeSent(held=[], sizes=[], sha256=[], count=None, error=lines.last("error"))
    held = [a == b and a != "-" for a, b in zip(before, after, strict=True)]
    # file_state: device, inode, size, mtime.
    sizes = [as_int(state.split(" ")[2]) if state.count(" ") >= 2 else None for state in before]
    return TreeSent(held=held, sizes=sizes, sha256=digests, count=count, error=None)


def range_sent(done: Completed) -> Sent:
    """send_range.sh's verdict on stderr: as send.sh's."""
    return sent(done)


class RangeHashes(msgspec.Struct, frozen=True, kw_only=True):
    """hash_ranges.sh's answer: the far sha256 of each (offset, length) asked for, all taken
    while the file was in the state given; `changed` when it was not."""

    sha256: dict[tuple[int, int], str]
    changed: bool
    error: FarError | None
    exit: int
    error_text: str


async def hash_ranges(
    transport: Runner,
    run_dir: str,
    rel: str,
    state: str,
    ranges: Sequence[tuple[int, int]],
    *,
    timeout: float = 60,
) -> RangeHashes:
    args = [run_dir, rel, state]
    for offset, length in ranges:
        args += [str(offset), str(length)]
    done = await transport.run("hash_ranges", args, timeout=timeout)
    lines = Lines(done.stdout)
    found: dict[tuple[int, int], str] = {}
    for row in lines.rows("range"):
        at, count = as_int(row[0]), as_int(row[1] if len(row) == 3 else "")
        if at is not None and count is not None:
            found[(at, count)] = row[2]
    error = lines.error()
    return RangeHashes(
        sha256=found if done.returncode == Exit.OK else {},
        changed=error is not None and error.word == ErrorWord.CHANGED,
        error=error,
        exit=done.returncode,
        error_text=done.error_text,
    )


def failed_read(done: Completed) -> FarError | None:
    """The `error` line a script printed before sending any byte (a refused path)."""
    return far_error(Lines(done.stdout).last("error") or Lines(done.stderr).last("error"))


class Collected(msgspec.Struct, frozen=True, kw_only=True):
    """gc_cache.sh's `freed BYTES ENTRIES PARTIALS`; None values when it did not say."""

    freed_bytes: int | None
    entries: int | None
    partials: int | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and None not in (self.freed_bytes, self.entries, self.partials)


async def gc_cache(transport: Runner, workdir: str) -> Collected:
    done = await transport.run("gc_cache", [workdir], timeout=600)
    freed = (Lines(done.stdout).last("freed") or []) + [""] * 3
    return Collected(
        freed_bytes=as_int(freed[0]),
        entries=as_int(freed[1]),
        partials=as_int(freed[2]),
        exit=done.returncode,
        error_text=done.error_text,
    )
