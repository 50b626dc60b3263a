"""receive_tree.sh: many files in one tar stream (as the daemon writes it), each kept only
when its sha256 matches, and none of them when one does not; each content into the cache."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

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


def receiving(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.iterdir() if p.name.startswith(".rtrain-receiving")]


def test_every_file_lands_under_its_name_and_each_content_in_the_cache(
    remote: Remote, tmp_path: Path
) -> None:
    run_id, run_dir = remote.prepare()

    result = remote.run(
        "receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=encoded(tmp_path, FILES)
    )

    assert result.returncode == 0, result
    assert result.value("received") == str(len(FILES))
    for name, data in FILES.items():
        assert (run_dir / name).read_bytes() == data
    assert not receiving(run_dir) and not (run_dir / "pwned").exists()
    cache = remote.home / ".rtrain" / ".cache" / "inputs"
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        {hashlib.sha256(d).hexdigest() for d in FILES.values()}
    )
    # The run's files are its own: rewriting one leaves the cache as it was.
    (run_dir / "a b.txt").chmod(0o600)
    (run_dir / "a b.txt").write_bytes(b"rewritten")
    assert (cache / hashlib.sha256(b"spaces\n").hexdigest()).read_bytes() == b"spaces\n"


def test_one_file_other_than_hashed_and_nothing_lands(remote: Remote, tmp_path: Path) -> None:
    run_id, run_dir = remote.prepare()
    claimed = {**FILES, "ünï/çödé ✓.bin": b"what was hashed"}

    result = remote.run(
        "receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=encoded(tmp_path, FILES, claimed)
    )

    assert result.returncode == 3, result
    assert result.values("mismatch") == [["ünï/çödé ✓.bin"]]
    assert not (run_dir / "a b.txt").exists() and not (run_dir / "deep").exists()
    assert not receiving(run_dir)
    assert not list((remote.home / ".rtrain" / ".cache" / "inputs").iterdir())


def test_a_name_leaving_the_run_is_refused(remote: Remote, tmp_path: Path) -> None:
    run_id, run_dir = remote.prepare()

    data = encoded(tmp_path, {"../outside": b"x"})
    result = remote.run("receive_tree", "~/.rtrain", str(run_dir), run_id, stdin=data)

    assert result.returncode == 7, result
    assert not (run_dir.parent / "outside").exists()
