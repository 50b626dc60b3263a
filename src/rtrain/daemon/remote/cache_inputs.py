# The Python half of the far side of the input cache (cache_place.sh, and the scripts that put
# an entry into the cache): one interpreter for all the inputs of a start, so that placing
# 3,000 cached files is a few syscalls each, not a few processes each. Run as
# `python3 -c PROGRAM MODE CACHE_DIR ...`; the daemon sends it inside those scripts as one
# single-quoted sh word (daemon/remote/__init__.py), so it holds no single quote. Python 3
# and its standard library only (the far host has nothing of rtrain installed).
#
#   place CACHE_DIR RUN_DIR   stdin: `SHA256<TAB>SIZE<TAB>NAME` lines. Each input the cache
#                             holds, provably unchanged, becomes RUN_DIR/NAME, owned by the run
#                             (a reflink where the filesystem makes one, else a copy):
#                             `placed<TAB>NAME<TAB>copied`. Every other one: `missing<TAB>NAME`
#                             and `piece<TAB>NAME<TAB>OFFSET<TAB>LENGTH` for each piece a cut
#                             upload left verified.
#   seal CACHE_DIR            stdin: `SHA256` lines, entries just verified and moved into the
#                             cache: their identity is written down.
#   receive CACHE_DIR RUN_DIR STAGE
#                             stdin: the stream of receive_tree.sh (its listing, then the tar).
#                             Each content is hashed as it is written, enters the cache at once
#                             when it is its sha256 (so a cut upload keeps what landed), and
#                             the own copy of the run waits in STAGE; once every content has
#                             come and is good, each copy is renamed under its name in RUN_DIR:
#                             `received COUNT`. Else `mismatch NAME` per name whose bytes did
#                             not come as hashed, exit 3, and nothing lands in RUN_DIR.
#
# Trust: an entry is placed without reading it only while its identity (device, inode, size,
# mtime and ctime to the nanosecond, no write bit) is the one written down when it was last
# verified. Any change to the file (a write, a chmod, a new link) moves its ctime, which no
# user can set back. An entry in doubt is hashed again: kept (and its identity written down
# anew) when it is still its sha256, else removed, and the input is sent again.
from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

CHUNK = 1 << 20
# ioctl FICLONE (linux/fs.h): a reflink, no bytes copied, on btrfs, XFS and the like.
FICLONE = 0x40049409
# Exit codes of lib/core.sh.
E_USAGE = 2
E_MISMATCH = 3
E_WRITE = 4
E_OUTSIDE = 7
# The block of tar.
BLOCK = 512
# The identity file is rewritten without the lines of gone or replaced entries once it holds
# this many more lines than entries.
SLACK = 1000
# Files copied into place side by side.
PLACE_SIDE_BY_SIDE = 4


def emit(*fields: str) -> None:
    sys.stdout.write("\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields) + "\n")


def fail(code: int, *fields: str) -> None:
    emit("error", *fields)
    sys.stdout.flush()
    sys.exit(code)


def identity(st: os.stat_result) -> str:
    return (
        f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} "
        f"{stat.S_IMODE(st.st_mode):o}"
    )


class Identities:
    """The identity of each entry as it was when last verified (`CACHE_DIR/identities`:
    `SHA256 IDENTITY` lines, appended; the last line of an entry counts)."""

    def __init__(self, cache_dir: str) -> None:
        self.path = os.path.join(cache_dir, "identities")
        self.known: dict[str, str] = {}
        self.lines = 0
        try:
            with open(self.path) as f:
                for line in f:
                    sha, _, rest = line.rstrip("\n").partition(" ")
                    self.known[sha] = rest
                    self.lines += 1
        except OSError:
            pass

    def trusts(self, sha: str, st: os.stat_result) -> bool:
        read_only = not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        return read_only and self.known.get(sha) == identity(st)

    def write_down(self, entries: dict[str, os.stat_result], inputs_dir: str) -> None:
        if not entries:
            return
        for sha, st in entries.items():
            self.known[sha] = identity(st)
        try:
            if self.lines + len(entries) > len(self.known) + SLACK:
                self._rewrite(inputs_dir)
            else:
                text = "".join(f"{sha} {identity(st)}\n" for sha, st in entries.items())
                # One write to an O_APPEND file: starts side by side never mix their lines.
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
        except OSError:
            pass  # no record only means the next start hashes the entry again

    def _rewrite(self, inputs_dir: str) -> None:
        kept = [
            f"{sha} {ident}\n"
            for sha, ident in sorted(self.known.items())
            if os.path.exists(os.path.join(inputs_dir, sha))
        ]
        temporary = f"{self.path}.{os.getpid()}"
        with open(temporary, "w") as f:
            f.write("".join(kept))
        os.replace(temporary, self.path)


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        block = f.read(CHUNK)
        while block:
            digest.update(block)
            block = f.read(CHUNK)
    return digest.hexdigest()


def checked(
    inputs_dir: str, sha: str, identities: Identities, fresh: dict[str, os.stat_result]
) -> bool:
    """True when entry `sha` is provably its bytes (`fresh` gets its identity when it was
    hashed again); an entry that is not its sha256 any more is removed."""
    entry = os.path.join(inputs_dir, sha)
    try:
        st = os.stat(entry)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if identities.trusts(sha, st):
        return True
    try:
        same = sha256_of(entry) == sha
    except OSError:
        return False
    if not same:
        sys.stderr.write(f"rtrain: the cached input {sha} was changed in place; it is sent again\n")
        try:
            os.remove(entry)
        except OSError:
            pass
        return False
    try:
        os.chmod(entry, stat.S_IMODE(st.st_mode) & ~0o222)
        fresh[sha] = os.stat(entry)
    except OSError:
        return False
    return True


def bad_name(name: str) -> bool:
    parts = name.split("/")
    return name.startswith("/") or any(p in ("", ".", "..") for p in parts)


class Copier:
    """Private copies of cache entries with as few syscalls as a file allows: a reflink
    where the filesystem makes one (tried until it says it cannot), else copy_file_range
    (the kernel copies, no bytes through python), else read and write. No fsync: a run dir
    whose placement did not finish is never launched."""

    def __init__(self) -> None:
        self.clones = True
        self.ranges = hasattr(os, "copy_file_range")

    def copy(self, source: str, target: str) -> None:
        """`target`, new (private: the umask of the caller), holding the bytes of `source`."""
        src = os.open(source, os.O_RDONLY)
        try:
            dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                self._bytes(src, dst, os.fstat(src).st_size)
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def _bytes(self, src: int, dst: int, size: int) -> None:
        if self.clones:
            try:
                import fcntl

                fcntl.ioctl(dst, FICLONE, src)
                return
            except ImportError:
                self.clones = False
            except OSError as error:
                if error.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL):
                    self.clones = False  # this filesystem makes no reflinks: stop asking
        done = 0
        if self.ranges:
            try:
                while done < size:
                    moved = os.copy_file_range(src, dst, size - done)
                    if moved == 0:
                        break
                    done += moved
            except OSError as error:
                if error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EPERM):
                    raise
                self.ranges = False
        os.lseek(src, done, os.SEEK_SET)
        os.lseek(dst, done, os.SEEK_SET)
        block = os.read(src, CHUNK)
        while block:
            view = memoryview(block)
            while view:
                view = view[os.write(dst, view) :]
            block = os.read(src, CHUNK)


# One for the process: what it learns of the filesystem (no reflinks) holds for every file.
COPIER = Copier()


def parsed(line: str) -> tuple[str, int, str]:
    """One line of stdin, `SHA<TAB>SIZE<TAB>NAME`; a malformed one ends the script."""
    fields = line.rstrip("\n").split("\t", 2)
    if len(fields) != 3 or not fields[1].isdigit():
        fail(E_USAGE, "usage")
    sha, size, name = fields
    if len(sha) != 64 or sha.strip("0123456789abcdef"):
        fail(E_USAGE, "usage")
    if bad_name(name):
        fail(E_OUTSIDE, "path_outside_run", name)
    return sha, int(size), name


def place_copy(entry: str, target: str, made: set[str]) -> None:
    """A copy of a verified entry for the run, renamed into place only when whole."""
    folder = os.path.dirname(target)
    temporary = os.path.join(folder, f".{os.path.basename(target)}.placing-{os.getpid()}")
    try:
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        COPIER.copy(entry, temporary)
        os.replace(temporary, target)
    except OSError:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise


def say_missing(partial_dir: str, sha: str, name: str) -> None:
    """An input to send, with the pieces of it that an earlier upload left."""
    emit("missing", name)
    try:
        markers = os.listdir(os.path.join(partial_dir, sha + ".pieces"))
    except OSError:
        markers = []
    for marker in sorted(markers):
        offset, _, length = marker.partition("-")
        if offset.isdigit() and length.isdigit():
            emit("piece", name, offset, length)


def place(cache_dir: str, run_dir: str) -> None:
    inputs_dir = os.path.join(cache_dir, "inputs")
    partial_dir = os.path.join(cache_dir, "partial")
    identities = Identities(cache_dir)
    fresh: dict[str, os.stat_result] = {}
    good: dict[str, bool] = {}
    todo: list[tuple[str, str, str]] = []
    missing = 0
    for line in sys.stdin:
        sha, size, name = parsed(line)
        if sha not in good:
            good[sha] = checked(inputs_dir, sha, identities, fresh)
        entry = os.path.join(inputs_dir, sha)
        if not (good[sha] and os.path.getsize(entry) == size):
            say_missing(partial_dir, sha, name)
            missing += 1
            continue
        todo.append((entry, os.path.join(run_dir, name), name))
    identities.write_down(fresh, inputs_dir)
    placed, failure = place_all(todo)
    if failure is None and not missing:
        # Every input placed (the same code again): one line, not one per file, which on a
        # slow link is a round trip or more of answer for a few thousand files.
        emit("placed_all", str(len(placed)))
    else:
        for name in placed:
            emit("placed", name, "copied")
    if failure is not None:
        fail(E_WRITE, "write", failure)


def place_all(todo: list[tuple[str, str, str]]) -> tuple[list[str], str | None]:
    """Each (ENTRY, TARGET, NAME) copied into place, a few side by side (a disk that many
    others write to makes each new file wait; waits side by side overlap); the names
    placed, and the first failure as `NAME: WHY`."""
    made: set[str] = set()
    try:
        for folder in sorted({os.path.dirname(target) for _, target, _ in todo}):
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
    except OSError as error:
        return [], f"{folder}: {error.strerror or error}"

    def one(job: tuple[str, str, str]) -> str | None:
        entry, target, name = job
        try:
            place_copy(entry, target, made)
        except OSError as error:
            return f"{name}: {error.strerror or error}"
        return None

    with ThreadPoolExecutor(PLACE_SIDE_BY_SIDE) as pool:
        failures = list(pool.map(one, todo))
    placed = [job[2] for job, why in zip(todo, failures) if why is None]  # noqa: B905 (3.8)
    return placed, next((why for why in failures if why is not None), None)


def seal(cache_dir: str) -> None:
    inputs_dir = os.path.join(cache_dir, "inputs")
    identities = Identities(cache_dir)
    entries: dict[str, os.stat_result] = {}
    for line in sys.stdin:
        sha = line.strip()
        if len(sha) != 64 or sha.strip("0123456789abcdef"):
            continue
        try:
            entries[sha] = os.stat(os.path.join(inputs_dir, sha))
        except OSError:
            pass
    identities.write_down(entries, inputs_dir)


def is_sha(text: str) -> bool:
    return len(text) == 64 and not text.strip("0123456789abcdef")


def listing(source: BinaryIO) -> list[tuple[str, str]]:
    """The head of the stream: `COUNT` then COUNT `SHA256<TAB>NAME` lines; every name is checked
    before any byte is written."""
    read = source.readline
    count = read().decode().strip()
    if not count.isdigit():
        fail(E_USAGE, "usage")
    names: list[tuple[str, str]] = []
    for _ in range(int(count)):
        sha, tab, name = read().decode("utf-8", "surrogateescape").rstrip("\n").partition("\t")
        if not tab or not is_sha(sha):
            fail(E_USAGE, "usage")
        if bad_name(name):
            fail(E_OUTSIDE, "path_outside_run", name)
        names.append((sha, name))
    return names


class Receiver:
    """The contents of one stream: each written twice as it comes (the entry of the cache and
    the own copy of the run: no run shares a file with the cache) and hashed on the way."""

    def __init__(self, cache_dir: str, stage: str) -> None:
        self.inputs_dir = os.path.join(cache_dir, "inputs")
        self.identities = Identities(cache_dir)
        self.stage = stage
        self.sealed: dict[str, os.stat_result] = {}
        self.good: set[str] = set()

    def content(self, sha: str, source: BinaryIO, size: int) -> None:
        read = source.read
        entry = os.path.join(self.stage, f"c-{sha}")
        own = os.path.join(self.stage, f"r-{sha}")
        digest = hashlib.sha256()
        with open(entry, "wb") as cached, open(own, "wb") as copy:
            left = size
            while left > 0:
                block = read(min(CHUNK, left))
                if not block:
                    raise EarlyEnd()
                left -= len(block)
                digest.update(block)
                cached.write(block)
                copy.write(block)
            skip(source, -size % BLOCK)
        if digest.hexdigest() != sha:
            os.remove(entry)
            os.remove(own)
            return
        os.chmod(entry, 0o444)
        target = os.path.join(self.inputs_dir, sha)
        os.replace(entry, target)
        self.sealed[sha] = os.stat(target)
        self.good.add(sha)

    def seal(self) -> None:
        self.identities.write_down(self.sealed, self.inputs_dir)
        self.sealed = {}


class EarlyEnd(Exception):
    """The stream ended inside a member: the sender was cut."""


def skip(source: BinaryIO, count: int) -> None:
    read = source.read
    while count > 0:
        block = read(min(CHUNK, count))
        if not block:
            raise EarlyEnd()
        count -= len(block)


def members(source: BinaryIO) -> Iterator[tuple[bytes, str, int]]:
    """(KIND, NAME, SIZE) of each member of the tar on `source`, whose bytes the caller
    reads (or skips) before the next. Only what the daemon writes is read: ustar headers,
    with pax (or GNU long name) members before a link of a long name, which are skipped."""
    read = source.read
    while True:
        header = read(BLOCK)
        if len(header) < BLOCK:
            raise EarlyEnd()
        if not header.strip(b"\0"):
            return
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        field = header[124:136].strip(b"\0 ")
        if not field.isdigit():
            fail(E_USAGE, "usage", name)
        size, kind = int(field, 8), header[156:157]
        if kind in (b"x", b"g", b"L", b"K"):
            skip(source, size + -size % BLOCK)
            continue
        yield kind, name, size


def receive(cache_dir: str, run_dir: str, stage: str) -> None:
    source = sys.stdin.buffer
    names = listing(source)
    wanted = {sha for sha, _ in names}
    receiver = Receiver(cache_dir, stage)
    try:
        for kind, name, size in members(source):
            if kind == b"1" and name.startswith("t/"):
                continue  # names come from the listing; the links are for tar
            sha = name[2:]
            if kind not in (b"0", b"\0") or not name.startswith("c/") or sha not in wanted:
                fail(E_USAGE, "usage", name)
            receiver.content(sha, source, size)
    except OSError as error:
        fail(E_WRITE, "write", str(error.strerror or error))
    except EarlyEnd:
        fail(E_USAGE, "usage", "the stream ended early")
    finally:
        receiver.seal()
    bad = [name for sha, name in names if sha not in receiver.good]
    if bad:
        for name in bad:
            emit("mismatch", name)
        sys.stdout.flush()
        sys.exit(E_MISMATCH)
    place_received(names, receiver, run_dir)
    emit("received", str(len(names)))


def place_received(names: list[tuple[str, str]], receiver: Receiver, run_dir: str) -> None:
    """Each name, a file of its own in RUN_DIR: the first of a content is its staged copy
    (renamed), each further one a copy of the entry in the cache."""
    made: set[str] = set()
    for sha, name in names:
        own = os.path.join(receiver.stage, f"r-{sha}")
        target = os.path.join(run_dir, name)
        try:
            folder = os.path.dirname(target)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            try:
                os.replace(own, target)
            except FileNotFoundError:
                place_copy(os.path.join(receiver.inputs_dir, sha), target, made)
        except OSError as error:
            fail(E_WRITE, "write", f"{name}: {error.strerror or error}")


def main(argv: list[str]) -> None:
    if len(argv) == 4 and argv[1] == "place":
        place(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "seal":
        seal(argv[2])
    elif len(argv) == 5 and argv[1] == "receive":
        receive(argv[2], argv[3], argv[4])
    else:
        fail(E_USAGE, "usage")


if __name__ == "__main__":
    main(sys.argv)
