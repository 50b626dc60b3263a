"""receive_tree.sh: many files in one tar stream (as the daemon writes it), each kept only
when its sha256 matches, and none of them when one does not; each content into the cache.
Each test runs twice: with python3 (one far python3 receives the stream) and on a host
without it (the shell and tar do)."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtrain.daemon.remote.cache_inputs import FILL_LOCK
from rtrain.daemon.transfer.tree_ship import stream

from .conftest import Remote

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
