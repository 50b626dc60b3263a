"""Hostile input through the daemon: run ids, workdirs, fetch paths and host aliases carrying
shell syntax or ssh options are refused before any ssh runs, and leave nothing behind."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.operations import trainers
from tests.operations.harness import Ops, daemon_ssh_pids

# `{marker}` becomes a file name unique to the test: it exists only if a payload ran.
CORPUS = [
    "x;touch {marker}",
    "$(touch {marker})",
    "`touch {marker}`",
    "with space",
    "../escape",
    "/abs",
    "",
    "-leading",
    "-oProxyCommand=touch {marker}",
]
METHODS_WITH_RUN = ["run/start", "run/status", "run/tail", "run/fetch", "run/stop"]


def payloads(ops: Ops) -> list[str]:
    return [p.format(marker=marker(ops)) for p in CORPUS]


def marker(ops: Ops) -> Path:
    return Path(f"/tmp/rtrain-pwned-{ops.tag}")


def params_for(ops: Ops, method: str, **override: Any) -> dict[str, Any]:
    """Valid params for `method`, then the field under test replaced."""
    base: dict[str, Any] = {"host": "plain", "runId": "victim-run", "workdir": ops.workdir}
    if method == "host/preflight":
        base = {"host": "plain", "workdir": ops.workdir}
    if method == "run/start":
        base["config"] = str(ops.file("config.yaml", "a: 1\n"))
        base["command"] = ["{python}", "-c", "print(1)"]
    if method == "run/fetch":
        base.update(path="train.log", dest=str(ops.tmp / "dest"))
    if method == "run/tail":
        base["follow"] = False
    base.update(override)
    return base


def places_a_payload_could_land(ops: Ops, payload: str) -> Iterator[Path]:
    yield marker(ops)
    if payload:
        for base in (ops.home, ops.far_workdir, Path.home(), Path.cwd(), ops.tmp):
            yield Path(os.path.normpath(base / payload))


class NoSsh:
    """Proves that nothing reached ssh: no connection in the host list, no ssh process of
    the daemon, and not one new connection in the plain sshd's log (a connection an earlier
    test left open may still log its last commands and its close meanwhile)."""

    def __init__(self, ops: Ops) -> None:
        self.ops = ops
        self.log_size = ops.hosts.plain_log.stat().st_size

    def check(self) -> None:
        hosts = self.ops.request("hosts/list").hosts
        assert [h.alias for h in hosts] == ["local"], hosts
        assert daemon_ssh_pids(self.ops) == []
        with open(self.ops.hosts.plain_log, "rb") as log:
            log.seek(self.log_size)
            since = log.read().decode(errors="replace")
        assert "Connection from" not in since, since


def assert_left_nothing(ops: Ops, payload: str) -> None:
    for path in places_a_payload_could_land(ops, payload):
        assert not path.exists() and not path.is_symlink(), path
    assert not ops.far_workdir.exists()


ALL_METHODS = ["host/preflight", *METHODS_WITH_RUN]


def test_hostile_host_aliases(ops: Ops) -> None:
    guard = NoSsh(ops)
    for method in ALL_METHODS:
        for payload in payloads(ops):
            error = ops.error(method, params_for(ops, method, host=payload))
            assert error.kind == "invalid_host", (method, payload, error)
            assert_left_nothing(ops, payload)
    guard.check()


def test_hostile_run_ids(ops: Ops) -> None:
    guard = NoSsh(ops)
    for method in METHODS_WITH_RUN:
        for payload in payloads(ops):
            error = ops.error(method, params_for(ops, method, runId=payload))
            assert error.kind == "invalid_run_id", (method, payload, error)
            assert_left_nothing(ops, payload)
    guard.check()


def test_hostile_workdirs(ops: Ops) -> None:
    guard = NoSsh(ops)
    for method in ALL_METHODS:
        for payload in payloads(ops):
            # An absolute workdir (`/scratch/runs`) is a legitimate choice; see below for "-".
            if payload in ("/abs", "-leading"):
                continue
            error = ops.error(method, params_for(ops, method, workdir=payload))
            assert error.kind == "invalid_workdir", (method, payload, error)
            assert_left_nothing(ops, payload)
    guard.check()


def test_a_workdir_with_a_leading_dash(ops: Ops) -> None:
    workdir = f"-leading-{ops.tag}"
    try:
        guard = NoSsh(ops)
        for method in ALL_METHODS:
            error = ops.error(method, params_for(ops, method, workdir=workdir))
            assert error.kind == "invalid_workdir", (method, error)
        guard.check()
    finally:
        shutil.rmtree(ops.home / workdir, ignore_errors=True)


def test_fetch_paths_leaving_the_run_are_refused_before_ssh(ops: Ops) -> None:
    guard = NoSsh(ops)
    for path in ["../escape", "/abs", "", "x/../../escape", "/etc/passwd", "a/.."]:
        error = ops.error("run/fetch", params_for(ops, "run/fetch", path=path))
        assert error.kind in ("path_outside_run", "invalid_path"), (path, error)
    assert not (ops.tmp / "dest").exists()
    guard.check()


def test_fetch_paths_with_shell_syntax_are_only_names(ops: Ops) -> None:
    """Such names are legal file names in a run dir; they travel as data, never as shell."""
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    ops.wait_state(run_id, lambda run: run.state != "running")
    dest = ops.tmp / "dest"
    for payload in payloads(ops):
        if payload in ("", "../escape", "/abs"):
            continue
        error = ops.error(
            "run/fetch",
            {"host": "plain", "runId": run_id, "path": payload, "dest": str(dest)},
        )
        assert error.kind == "remote_file_missing", (payload, error)
        assert not marker(ops).exists()
    assert not dest.exists() or list(dest.iterdir()) == []
    # The run dir holds only what the run made.
    names = {p.name for p in ops.far_run_dir(run_id).iterdir()}
    made = {"config.yaml", "train.log", ".rtrain", "meta.json"}
    # ...and launch.sh's own first steps, and the watcher of the run's limits.
    assert names <= made | {
        "rtrain-run",
        ".rtrain-run",
        "rtrain-steps",
        "rtrain-limits",
        "rtrain-stop",
        "limits.pid",
    }
