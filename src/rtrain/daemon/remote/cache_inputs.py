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
#                             `placed<TAB>NAME<TAB>copied`, or with no failure one line
#                             `placed_all<TAB>COUNT` for all of them. Every other one:
#                             `missing<TAB>NAME`
#                             and `piece<TAB>NAME<TAB>OFFSET<TAB>LENGTH` for each piece a cut
#                             upload left verified.
#   fill CACHE_DIR RUN_DIR    stdin: `SHA256<TAB>NAME` lines, inputs just verified and placed
#                             as RUN_DIR/NAME (seal_input.sh): after the answer, as for
#                             `receive`, each gets a private copy in the cache.
#   small CACHE_DIR RUN_DIR   stdin: for each of a few small inputs, a line `SHA256<TAB>SIZE<TAB>
#                             NAME` and a line of its bytes in base64. Bytes that are their
#                             sha256 and size enter the cache and are placed as RUN_DIR/NAME
#                             (`placed<TAB>NAME<TAB>copied`); others: `mismatch<TAB>NAME`, exit
#                             3 once every one was looked at, nothing placed under that name.
#   seal CACHE_DIR            stdin: `SHA256` lines, entries just verified and moved into the
#                             cache: their identity is written down.
#   receive CACHE_DIR RUN_DIR STAGE
#                             stdin: the stream of receive_tree.sh (its listing, then the tar).
#                             Each content is written once, hashed as it is written, under
#                             its first name in the tree in STAGE. Once every content has come
#                             and is good, the tree moves into RUN_DIR (a folder it lacks, by
#                             one rename): `received COUNT`. A process of its own then gives
#                             each content a private copy in the cache, from the file of the
#                             run, hashed again (`place` waits for it where an input is
#                             missing: FILL_LOCK). Else `mismatch NAME` per name whose bytes
#                             did not come as hashed, exit 3, nothing lands in RUN_DIR, and
#                             what was verified enters the cache (a cut upload keeps what
#                             landed).
#
# Trust: an entry is placed without reading it only while its identity (device, inode, size,
# mtime and ctime to the nanosecond, no write bit) is the one written down when it was last
# verified. Any change to the file (a write, a chmod, a new link) moves its ctime, which no
# user can set back. An entry in doubt is hashed again: kept (and its identity written down
# anew) when it is still its sha256, else removed, and the input is sent again.
from __future__ import annotations

import base64
import errno
import fcntl
import hashlib
import os
import stat
import sys
import time
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
# Held (shared) by each fill of the cache after the answer to a stream; `place` waits for it
# where an input is missing.
FILL_LOCK = "fill.lock"
FILL_WAIT_S = 60


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
                fcntl.ioctl(dst, FICLONE, src)
                return
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
    wanted = [parsed(line) for line in sys.stdin]
    identities = Identities(cache_dir)
    fresh: dict[str, os.stat_result] = {}
    good: dict[str, bool] = {}

    def held(sha: str, size: int) -> bool:
        if sha not in good:
            good[sha] = checked(inputs_dir, sha, identities, fresh)
        return good[sha] and os.path.getsize(os.path.join(inputs_dir, sha)) == size

    if not all(held(sha, size) for sha, size, _ in wanted) and waited_for_fills(cache_dir):
        # A fill of the cache was running (a start just before this one): look again at
        # what was missing, with the identities it wrote down.
        identities = Identities(cache_dir)
        good = {sha: True for sha, ok in good.items() if ok}
    todo: list[tuple[str, str, str]] = []
    missing = 0
    for sha, size, name in wanted:
        if not held(sha, size):
            say_missing(partial_dir, sha, name)
            missing += 1
            continue
        todo.append((os.path.join(inputs_dir, sha), os.path.join(run_dir, name), name))
    identities.write_down(fresh, inputs_dir)
    placed, failure = place_all(todo)
    if failure is None:
        # Every input not named `missing` was placed (the same code again, or all but the
        # files that changed): one line, not one per file, which on a slow link is a round
        # trip or more of answer for a few thousand files.
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


def small(cache_dir: str, run_dir: str) -> None:
    inputs_dir = os.path.join(cache_dir, "inputs")
    partial_dir = os.path.join(cache_dir, "partial")
    identities = Identities(cache_dir)
    sealed: dict[str, os.stat_result] = {}
    made: set[str] = set()
    mismatched = 0
    lines = iter(sys.stdin)
    for head in lines:
        if not head.strip():
            continue
        sha, size, name = parsed(head)
        try:
            data = base64.b64decode(next(lines).strip(), validate=True)
        except (StopIteration, ValueError):
            fail(E_USAGE, "usage")
        if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
            emit("mismatch", name)
            mismatched += 1
            continue
        entry = os.path.join(inputs_dir, sha)
        try:
            if sha not in sealed:
                temporary = os.path.join(partial_dir, f"{sha}.small-{os.getpid()}")
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                os.chmod(temporary, 0o400)
                os.replace(temporary, entry)
                sealed[sha] = os.stat(entry)
            place_copy(entry, os.path.join(run_dir, name), made)
        except OSError as error:
            identities.write_down(sealed, inputs_dir)
            fail(E_WRITE, "write", f"{name}: {error.strerror or error}")
        emit("placed", name, "copied")
    identities.write_down(sealed, inputs_dir)
    if mismatched:
        sys.stdout.flush()
        sys.exit(E_MISMATCH)


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
    """The contents of one stream, each written once as it comes (hashed on the way), under
    the first name the run has for it, in a tree in STAGE that mirrors the run directory. A verified
    content whose run does not come (a cut stream, a mismatch elsewhere) enters the cache
    by a rename; one whose run does gets the cache entry as a private copy (no run shares a
    file with the cache) before the tree moves into the run."""

    def __init__(self, cache_dir: str, stage: str, names: list[tuple[str, str]]) -> None:
        self.cache_dir = cache_dir
        self.inputs_dir = os.path.join(cache_dir, "inputs")
        self.stage = stage
        self.tree = os.path.join(stage, "t")
        self.first: dict[str, str] = {}
        for sha, name in names:
            self.first.setdefault(sha, name)
        self.made: set[str] = set()
        # Each verified content: its file in that tree.
        self.good: dict[str, str] = {}

    def content(self, sha: str, source: BinaryIO, size: int) -> None:
        read = source.read
        own = os.path.join(self.tree, self.first[sha])
        folder = os.path.dirname(own)
        if folder not in self.made:
            os.makedirs(folder, exist_ok=True)
            self.made.add(folder)
        digest = hashlib.sha256()
        with open(own, "wb") as copy:
            left = size
            while left > 0:
                block = read(min(CHUNK, left))
                if not block:
                    raise EarlyEnd()
                left -= len(block)
                digest.update(block)
                copy.write(block)
            skip(source, -size % BLOCK)
        if digest.hexdigest() != sha:
            os.remove(own)
            return
        self.good[sha] = own

    def keep_landed(self) -> None:
        """The run does not come: what was verified enters the cache (renamed, not copied),
        so the next upload sends only the rest."""
        entries: dict[str, os.stat_result] = {}
        for sha, own in self.good.items():
            target = os.path.join(self.inputs_dir, sha)
            try:
                os.chmod(own, 0o444)
                os.replace(own, target)
                entries[sha] = os.stat(target)
            except OSError:
                pass
        # Read only now: a stream that lands whole never needs the record.
        Identities(self.cache_dir).write_down(entries, self.inputs_dir)

    def files(self, run_dir: str) -> list[tuple[str, str]]:
        """(SHA, the file of the run that holds it) of each verified content."""
        return [(sha, os.path.join(run_dir, self.first[sha])) for sha in self.good]


def fill_from(cache_dir: str, files: list[tuple[str, str]]) -> None:
    """Each (SHA, FILE): a private copy of the file of a run in the cache as entry SHA (a
    reflink, or a copy inside the kernel), hashed again before it enters: the run may have
    started and changed its file since."""
    inputs_dir = os.path.join(cache_dir, "inputs")
    entries: dict[str, os.stat_result] = {}
    for sha, source in files:
        temporary = os.path.join(inputs_dir, f".filling-{sha}-{os.getpid()}")
        target = os.path.join(inputs_dir, sha)
        try:
            COPIER.copy(source, temporary)
            if sha256_of(temporary) != sha:
                os.remove(temporary)
                continue
            os.chmod(temporary, 0o444)
            os.replace(temporary, target)
            entries[sha] = os.stat(target)
        except OSError:
            try:
                os.remove(temporary)
            except OSError:
                pass  # no entry only means the next start sends this input again
    Identities(cache_dir).write_down(entries, inputs_dir)


def fill_after_answer(cache_dir: str, files: list[tuple[str, str]]) -> None:
    """`fill_from` in a process of its own, after the answer: the run need not wait for the
    second copy of its inputs. The fill holds FILL_LOCK shared until it ends, and `place`
    waits for it where an input is missing, so a start right after this one finds every
    entry."""
    sys.stdout.flush()
    try:
        lock = os.open(os.path.join(cache_dir, FILL_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_SH)
        child = os.fork()
    except OSError:
        fill_from(cache_dir, files)
        return
    if child:
        os.close(lock)  # the copy in the child holds the lock
        return
    try:
        os.setsid()
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)  # the channel ends when every writer of the answer does
        fill_from(cache_dir, files)
    finally:
        os._exit(0)


def fill(cache_dir: str, run_dir: str) -> None:
    """stdin: `SHA<TAB>NAME` lines, inputs just verified and placed as RUN_DIR/NAME: each
    enters the cache after the answer."""
    files = []
    for line in sys.stdin:
        sha, tab, name = line.rstrip("\n").partition("\t")
        if not tab or not is_sha(sha) or bad_name(name):
            fail(E_USAGE, "usage")
        files.append((sha, os.path.join(run_dir, name)))
    fill_after_answer(cache_dir, files)


def waited_for_fills(cache_dir: str) -> bool:
    """Whether a fill of the cache was running; if so, until none is (at most FILL_WAIT_S),
    so that what it is copying in is placed, not sent again."""
    try:
        lock = os.open(os.path.join(cache_dir, FILL_LOCK), os.O_RDONLY)
    except OSError:
        return False  # no fill ever ran here
    deadline = time.monotonic() + FILL_WAIT_S
    waited = False
    try:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return waited
            except OSError:
                if time.monotonic() > deadline:
                    return waited  # a stuck fill costs a resend, never a start
                waited = True
                time.sleep(0.01)
    finally:
        os.close(lock)


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
    receiver = Receiver(cache_dir, stage, names)
    try:
        for kind, name, size in members(source):
            if kind == b"1" and name.startswith("t/"):
                continue  # names come from the listing; the links are for tar
            sha = name[2:]
            if kind not in (b"0", b"\0") or not name.startswith("c/") or sha not in receiver.first:
                fail(E_USAGE, "usage", name)
            receiver.content(sha, source, size)
    except OSError as error:
        receiver.keep_landed()
        fail(E_WRITE, "write", str(error.strerror or error))
    except EarlyEnd:
        receiver.keep_landed()
        fail(E_USAGE, "usage", "the stream ended early")
    bad = [name for sha, name in names if sha not in receiver.good]
    if bad:
        receiver.keep_landed()
        for name in bad:
            emit("mismatch", name)
        sys.stdout.flush()
        sys.exit(E_MISMATCH)
    try:
        copy_duplicates(names, receiver)
        merge_tree(receiver.tree, run_dir)
    except OSError as error:
        receiver.keep_landed()
        fail(E_WRITE, "write", str(error.strerror or error))
    emit("received", str(len(names)))
    fill_after_answer(cache_dir, receiver.files(run_dir))


def copy_duplicates(names: list[tuple[str, str]], receiver: Receiver) -> None:
    """Each further name of a content: a copy of its first one, in the tree in STAGE."""
    for sha, name in names:
        first = receiver.first[sha]
        if name != first:
            try:
                place_copy(
                    os.path.join(receiver.tree, first),
                    os.path.join(receiver.tree, name),
                    receiver.made,
                )
            except OSError as error:
                raise OSError(error.errno, f"{name}: {error.strerror or error}") from None


def merge_tree(tree: str, run_dir: str) -> None:
    """Every file of `tree` under the same name in `run_dir`: a folder the run dir does not
    have yet moves whole (one rename for a whole code tree), else its entries one by one.
    Two streams of one start merge side by side: a folder the other one just moved in is
    merged into."""
    if not os.path.isdir(tree):
        return  # a stream of no contents
    with os.scandir(tree) as entries:
        found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in found:
        source, target = os.path.join(tree, name), os.path.join(run_dir, name)
        if not is_dir:
            os.replace(source, target)
            continue
        try:
            os.rename(source, target)
        except OSError as error:
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
                raise
            merge_tree(source, target)


def main(argv: list[str]) -> None:
    if len(argv) == 4 and argv[1] == "place":
        place(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "fill":
        fill(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "small":
        small(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "seal":
        seal(argv[2])
    elif len(argv) == 5 and argv[1] == "receive":
        receive(argv[2], argv[3], argv[4])
    else:
        fail(E_USAGE, "usage")


if __name__ == "__main__":
    main(sys.argv)
