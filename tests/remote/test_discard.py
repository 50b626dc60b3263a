"""discard.sh: the directory of a start that never launched goes; a launched run's stays."""

from __future__ import annotations

from .conftest import Remote


def test_an_unlaunched_run_dir_is_removed_and_its_id_free_again(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    (run_dir / "config.yaml").write_text("a: 1\n")
    result = remote.run("discard", "~/.rtrain", run_id)
    assert result.returncode == 0, result
    assert result.value("discarded") == str(run_dir)
    assert not run_dir.exists()
    assert remote.run("prepare", "~/.rtrain", run_id).returncode == 0


def test_a_launched_run_dir_is_never_touched(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    (run_dir / "meta.json").write_text("{}\n")
    result = remote.run("discard", "~/.rtrain", run_id)
    assert result.returncode == 15, result
    assert (run_dir / "meta.json").read_text() == "{}\n"


def test_a_missing_run_dir_is_already_discarded(remote: Remote) -> None:
    result = remote.run("discard", "~/.rtrain", remote.new_run_id())
    assert result.returncode == 0, result
