"""receive_tree.sh: many files in one tar stream (as the daemon writes it), each kept only
when its sha256 matches, and none of them when one does not; each content into the cache.
Each test runs twice: with python3 (one far python3 receives the stream) and on a host
without it (the shell and tar do)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtrain.daemon.remote import script
from rtrain.daemon.remote.cache_inputs import FILL_LOCK
from rtrain.daemon.transfer.tree_ship import stream

from .conftest import Remote, wait_for

FILES = {
    "a b.txt": b"spaces\n",
    "ünï/çödé ✓.bin": bytes(range(256)) * 3,
    "empty": b"",
    "also empty": b"",
    "deep/er/f": b"\x00\xff" * 1000,
    "deep/copy of f": b"\x00\xff" * 1000,
    "$(touch pwned)": b"x",
}


@dataclass(frozen=True)
class Small:
    path: Path
    name: str
    size: int
    sha256: str


def encoded(tmp: Path, files: dict[str, bytes], claimed: dict[str, bytes] | None = None) -> bytes:
    said = claimed or files
    small = []
    for n, (name, data) in enumerate(files.items()):
        local = tmp / f"{n}.bin"
        local.write_bytes(data)
        small.append(Small(local, name, len(data), hashlib.sha256(said[name]).hexdigest()))
    return b"".join(stream(small, lambda _count: None))


@pytest.fixture(params=["python3", "no python"])
def env(
    request: pytest.FixtureRequest, remote: Remote, stripped_path: Callable[[set[str]], str]
) -> dict[str, str]:
    if request.param == "python3":
        return remote.env
    return {**remote.env, "PATH": stripped_path({"python3"})}


def wait_for_fills(cache_dir: Path) -> None:
    """Until no process fills the cache (each holds `fill.lock` shared while it copies)."""
    lock = cache_dir / FILL_LOCK
    if not lock.exists():
        return
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)


def receiving(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.iterdir() if p.name.startswith(".rtrain-receiving")]


def test_every_file_lands_under_its_name_and_each_content_in_the_cache(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    run_id, run_dir = remote.prepare()

    result = remote.run(
        "receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=encoded(tmp_path, FILES), env=env
    )

    assert result.returncode == 0, result
    assert result.value("received") == str(len(FILES))
    for name, data in FILES.items():
        assert (run_dir / name).read_bytes() == data
    assert not receiving(run_dir) and not (run_dir / "pwned").exists()
    # With python3 the cache is filled after the answer, by a process that holds the fill
    # lock until it is done (the next start's placement waits for it too).
    wait_for_fills(remote.home / ".rtrain" / ".cache")
    cache = remote.home / ".rtrain" / ".cache" / "inputs"
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        {hashlib.sha256(d).hexdigest() for d in FILES.values()}
    )
    # The run's files are its own: rewriting one leaves the cache as it was.
    (run_dir / "a b.txt").chmod(0o600)
    (run_dir / "a b.txt").write_bytes(b"rewritten")
    assert (cache / hashlib.sha256(b"spaces\n").hexdigest()).read_bytes() == b"spaces\n"


def test_one_file_other_than_hashed_and_nothing_lands(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    run_id, run_dir = remote.prepare()
    claimed = {**FILES, "ünï/çödé ✓.bin": b"what was hashed"}

    stdin = encoded(tmp_path, FILES, claimed)
    result = remote.run("receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=stdin, env=env)

    assert result.returncode == 3, result
    assert result.values("mismatch") == [["ünï/çödé ✓.bin"]]
    assert not (run_dir / "a b.txt").exists() and not (run_dir / "deep").exists()
    assert not receiving(run_dir)
    # The cache holds no entry of the bytes that did not come as hashed; what it holds (the
    # contents that did, where python3 keeps them at once) is each its sha256.
    cache = remote.home / ".rtrain" / ".cache" / "inputs"
    assert hashlib.sha256(b"what was hashed").hexdigest() not in {p.name for p in cache.iterdir()}
    for entry in cache.iterdir():
        assert hashlib.sha256(entry.read_bytes()).hexdigest() == entry.name


def test_a_name_leaving_the_run_is_refused(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    run_id, run_dir = remote.prepare()

    data = encoded(tmp_path, {"../outside": b"x"})
    result = remote.run("receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=data, env=env)

    assert result.returncode == 7, result
    assert not (run_dir.parent / "outside").exists()


def test_a_placement_waits_for_the_fill_that_brings_its_missing_inputs(remote: Remote) -> None:
    """A start right after a cold one finds the cache still filling: its placement waits
    for the fill (it holds the fill lock) and places what the fill brought, instead of
    answering `missing` and having every file sent again."""
    data = b"a file the fill is copying in\n"
    digest = hashlib.sha256(data).hexdigest()
    cache = remote.home / ".rtrain" / ".cache"
    (cache / "inputs").mkdir(parents=True)
    _, run_dir = remote.prepare()
    with open(cache / FILL_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # as a fill does while it copies
        placing = subprocess.Popen(
            [remote.shell, "-c", script("cache_place"), "rtrain", "~/.rtrain", str(run_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=remote.home,
            env=remote.env,
        )
        assert placing.stdin is not None
        placing.stdin.write(f"{digest}\t{len(data)}\tconf.txt\n".encode())
        placing.stdin.close()
        # It found the entry missing and waits on the lock (it holds the lock file open).
        wait_for(lambda: holds_open(placing.pid, cache / FILL_LOCK), what="a wait on the fill")
        entry = cache / "inputs" / digest
        entry.write_bytes(data)
        entry.chmod(0o444)  # the fill's entry, as it leaves it
    assert placing.stdout is not None
    with placing.stdout:
        out = placing.stdout.read()
    assert placing.wait(timeout=30) == 0, out
    assert b"missing" not in out and b"placed_all\t1" in out, out
    assert (run_dir / "conf.txt").read_bytes() == data


def holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` or one of its children has `path` open."""
    pids = [pid] + [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    for one in pids:
        try:
            if any(os.path.realpath(fd) == str(path) for fd in Path(f"/proc/{one}/fd").iterdir()):
                return True
        except OSError:
            continue
    return False
