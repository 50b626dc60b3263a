"""prepare.sh: a run directory is created once and never reused."""

from __future__ import annotations

import os
import stat

from tests.run_mark import names

from .conftest import Remote


def test_creates_private_run_dir_under_expanded_workdir(remote: Remote) -> None:
    run_id = remote.new_run_id()
    result = remote.run("prepare", "~/.rtrain", run_id)

    assert result.returncode == 0, result
    run_dir = remote.home / ".rtrain" / run_id
    assert result.lines == [["run_dir", str(run_dir)]]
    assert run_dir.is_dir()
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(run_dir.parent.stat().st_mode) == 0o700
    assert not (remote.home / "~").exists()


def test_bare_tilde_and_relative_workdirs_live_in_home(remote: Remote) -> None:
    first = remote.run("prepare", "~", "a")
    second = remote.run("prepare", "runs/here", "b")

    assert first.value("run_dir") == str(remote.home / "a")
    assert second.value("run_dir") == str(remote.home / "runs" / "here" / "b")


def test_existing_run_id_is_refused_and_left_untouched(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    (run_dir / "train.log").write_text("from the first run\n")
    os.chmod(run_dir, 0o750)
    before = run_dir.stat()

    result = remote.run("prepare", "~/.rtrain", run_id)

    assert result.returncode == 17
    assert result.lines == [["error", "run_exists"]]
    after = run_dir.stat()
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert names(run_dir) == ["train.log"]
    assert (run_dir / "train.log").read_text() == "from the first run\n"


def test_invalid_run_id_is_refused_before_touching_disk(remote: Remote) -> None:
    result = remote.run("prepare", "~/.rtrain", "../escape")

    assert result.returncode == 2
    assert result.lines == [["error", "bad_run_id"]]
    assert not (remote.home / ".rtrain").exists()
    assert not (remote.home / "escape").exists()
