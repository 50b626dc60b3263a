"""send.sh: a file's exact bytes, only from inside the run."""

from __future__ import annotations

from pathlib import Path

from .conftest import Remote

CONTENT = bytes(range(256)) * 1000


def test_sends_exact_bytes(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "out dir").mkdir()
    (run_dir / "out dir" / "ädapter.bin").write_bytes(CONTENT)

    result = remote.run("send", str(run_dir), "out dir/ädapter.bin")

    assert result.returncode == 0, result
    assert result.stdout == CONTENT


def test_outside_missing_and_directories_are_refused(remote: Remote, tmp_path: Path) -> None:
    _, run_dir = remote.prepare()
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    (run_dir / "escape").symlink_to(outside)
    (run_dir / "sub").mkdir()

    escape = remote.run("send", str(run_dir), "escape")
    missing = remote.run("send", str(run_dir), "nope.bin")
    directory = remote.run("send", str(run_dir), "sub")

    assert (escape.returncode, escape.stdout) == (7, b"error\tpath_outside_run\tescape\n")
    assert (missing.returncode, missing.lines) == (8, [["error", "not_found", "nope.bin"]])
    assert (directory.returncode, directory.lines) == (8, [["error", "not_a_file", "sub"]])
