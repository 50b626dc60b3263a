"""run/fetch end to end: files and trees come home byte for byte, and nothing from outside."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.operations import trainers
from tests.operations.harness import Ops


@pytest.fixture
def finished_run(ops: Ops) -> str:
    run_id = ops.new_run_id()
    ops.start(trainers.OUTPUTS, run_id=run_id)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert run.state == "completed", run
    return run_id


def fetch(ops: Ops, run_id: str, path: str, dest: Path, **params: Any) -> Any:
    return ops.request(
        "run/fetch", {"host": "plain", "runId": run_id, "path": path, "dest": str(dest), **params}
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fetch_one_file(ops: Ops, finished_run: str) -> None:
    dest = ops.tmp / "home"
    result = fetch(ops, finished_run, "model/config.json", dest)
    far = ops.far_run_dir(finished_run) / "model" / "config.json"
    [got] = result.files
    assert Path(got.local_path) == dest / "config.json"
    assert (dest / "config.json").read_bytes() == far.read_bytes()
    assert got.sha256 == sha256(far) and got.verified
    assert result.total_bytes == far.stat().st_size
    fetch(ops, finished_run, "train.log", dest)
    assert (dest / "train.log").read_bytes() == b"wrote outputs\n"


def test_fetch_a_directory_with_progress(ops: Ops, finished_run: str) -> None:
    dest = ops.tmp / "home"
    progress: list[Any] = []
    client = ops.client()
    result = client.request(
        "run/fetch",
        {
            "host": "plain",
            "runId": finished_run,
            "path": "./model/",
            "dest": str(dest),
            "progressToken": 7,
        },
        on_notification=lambda method, params: (
            progress.append(params) if method == "$/progress" else None
        ),
    )
    far = ops.far_run_dir(finished_run) / "model"
    local = dest / "model"
    expected = {
        "weights.bin": far / "weights.bin",
        "config.json": far / "config.json",
        "shards/part-0": far / "shards" / "part-0",
        # A link that stays inside the run comes home as the file it names.
        "inner-link": far / "weights.bin",
    }
    for rel, source in expected.items():
        assert sha256(local / rel) == sha256(source), rel
    assert (local / "empty").is_dir()
    assert sorted(Path(f.local_path).relative_to(local).as_posix() for f in result.files) == sorted(
        expected
    )
    assert all(f.verified for f in result.files)
    # No temporary file left behind under any name.
    assert sorted(p.relative_to(local).as_posix() for p in local.rglob("*")) == sorted(
        [*expected, "empty", "shards"]
    )
    # LSP's shape: the token beside a `value`, rtrain's byte counts inside it.
    assert progress[0].value.kind == "begin" and progress[-1].value.kind == "end"
    assert all(p.token == 7 for p in progress)
    end = progress[-1].value
    assert end.done_bytes == end.total_bytes == result.total_bytes and end.percentage == 100


def test_links_leaving_the_run_dir_are_refused(ops: Ops, finished_run: str) -> None:
    dest = ops.tmp / "home"
    for path in ["leak", "leaky", "leaky/up/etc/hostname"]:
        error = ops.error(
            "run/fetch",
            {"host": "plain", "runId": finished_run, "path": path, "dest": str(dest)},
        )
        assert error.kind == "path_outside_run", path
    assert not dest.exists() or list(dest.rglob("*")) == []

    error = ops.error(
        "run/fetch",
        {"host": "plain", "runId": finished_run, "path": "nope.bin", "dest": str(dest)},
    )
    assert error.kind == "remote_file_missing"


def test_a_local_folder_that_leads_outside_the_destination_is_refused(
    ops: Ops, finished_run: str
) -> None:
    dest = ops.tmp / "home"
    elsewhere = ops.tmp / "elsewhere"
    (dest / "model").mkdir(parents=True)
    elsewhere.mkdir()
    # The tree's folder `shards` is, here, a link out of the destination.
    (dest / "model" / "shards").symlink_to(elsewhere)
    error = ops.error(
        "run/fetch",
        {"host": "plain", "runId": finished_run, "path": "model", "dest": str(dest)},
    )
    assert error.kind == "path_outside_run"
    assert "would land outside" in error.message and str(dest) in error.message
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in (dest / "model").iterdir()) == ["shards"]


def test_a_relative_destination_is_refused_and_nothing_is_written(
    ops: Ops, finished_run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stock JSON-RPC client's relative path would land where the daemon runs, not here.
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    error = ops.error(
        "run/fetch",
        {"host": "plain", "runId": finished_run, "path": "model", "dest": "out"},
    )
    assert error.kind == "invalid_path"
    assert "relative" in error.message
    assert list(here.iterdir()) == []


def test_fetch_from_a_run_that_does_not_exist_says_so(ops: Ops) -> None:
    dest = ops.tmp / "nothing"
    error = ops.error(
        "run/fetch",
        {
            "host": "plain",
            "runId": ops.new_run_id(),
            "path": "lora_model",
            "dest": str(dest),
            "workdir": ops.workdir,
        },
    )
    assert error.kind == "run_not_found"
    assert "no run" in error.message
    assert not dest.exists()
