"""Tracker files synced home while a run trains (`rtrain start --sync mlflow|wandb`,
docs/trackers.md).

For each run started with `sync`, a loop here fetches the tracker's files of the run dir into
a mirror under the daemon's state directory (run/fetch: only what changed comes again, each
file verified), then hands the mirror to the tracker's importer, a subprocess of this
machine's python that imports only what it has not imported before (its state file beside
the mirror) into this machine's tracker, with this machine's credentials: nothing of them
is sent to the host. Every `interval` seconds while the run is live, and once more when it
has ended. The registry keeps which runs sync and how the last sync went, so a daemon
started later goes on (and makes the final sync of a run that ended meanwhile).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import posixpath
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.fetch import fetch
from rtrain.daemon.operations.run_exec import run_exec
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.locations import state_dir
from rtrain.protocol.messages import (
    ExecParams,
    FetchParams,
    RunInfo,
    StartParams,
    SyncTracker,
    TrackerSync,
)
from rtrain.protocol.run_states import is_ended

log = logging.getLogger(__name__)

# What each tracker keeps in the run dir, and the module that imports it here.
TRACKER_FILES: dict[SyncTracker, str] = {"mlflow": "mlruns", "wandb": "wandb"}
IMPORTERS: dict[SyncTracker, str] = {
    "mlflow": "rtrain.daemon.trackers.mlflow_import",
    "wandb": "rtrain.daemon.trackers.wandb_import",
}
# The package the importer needs on this machine, and how to install it.
PACKAGES: dict[SyncTracker, tuple[str, str]] = {
    "mlflow": ("mlflow", "pip install mlflow"),
    "wandb": ("wandb", "pip install wandb"),
}
# The run's environment, so its tracker writes the files the sync reads (unless the user
# set them): MLflow's file store in the run dir, which MLflow 3 asks to be allowed.
RUN_ENV: dict[SyncTracker, dict[str, str]] = {
    "mlflow": {"MLFLOW_TRACKING_URI": "mlruns", "MLFLOW_ALLOW_FILE_STORE": "true"},
    # W&B writes offline runs under wandb/ of its working directory, the run dir.
    "wandb": {"WANDB_MODE": "offline"},
}
DEFAULT_INTERVAL_S = 300.0
# W&B's offline runs' transaction logs, and their files/ folders.
WANDB_FIND = [
    "find", "wandb", "-mindepth", "1", "-maxdepth", "2",
    "(", "-name", "run-*.wandb", "-type", "f", ")", "-o", "(", "-name", "files", "-type", "d", ")",
]  # fmt: skip
IMPORT_TIMEOUT_S = 600.0


class _Quiet:
    """A fetch made for a sync reports its progress to no one."""

    def notify(self, method: str, params: Any) -> None:
        pass


def refuse_missing_packages(trackers: list[SyncTracker]) -> None:
    """The tracker's package missing here is one sentence, before anything starts."""
    for tracker in trackers:
        module, install = PACKAGES[tracker]
        if importlib.util.find_spec(module) is None:
            raise app_error(
                Kind.INVALID_REQUIREMENT,
                f"--sync {tracker} imports into this machine's {tracker}, which is not "
                f"installed for {sys.executable}: {install} (nothing was started).",
            )


def with_run_env(p: StartParams) -> StartParams:
    """`p` with the environment its trackers need to write where the sync reads."""
    env = dict(p.env)
    for tracker in p.sync:
        for name, value in RUN_ENV[tracker].items():
            env.setdefault(name, value)
    return msgspec.structs.replace(p, env=env)


class TrackerSyncs:
    def __init__(self, ops: DaemonState, interval: float | None = None) -> None:
        self.ops = ops
        chosen = interval or float(os.environ.get("RTRAIN_SYNC_INTERVAL") or DEFAULT_INTERVAL_S)
        self.interval = chosen
        self._loops: dict[tuple[str, str, SyncTracker], asyncio.Task[None]] = {}
        self._wake: dict[tuple[str, str], asyncio.Event] = {}

    def resume(self) -> None:
        """The syncs an earlier daemon left to make."""
        for (host, run_id), syncs in self.ops.registry.syncs(pending_only=True).items():
            for sync in syncs:
                self._loop(host, run_id, sync.tracker)

    def restarted(self, host: str, run_id: str) -> None:
        """A run's new attempt (a restart, a retry) syncs again, as its start asked."""
        for sync in self.ops.registry.syncs_of(host, run_id):
            self.ops.registry.record_sync(host, run_id, sync, done=False)
            self._loop(host, run_id, sync.tracker)

    def watch(self, run: RunInfo, trackers: list[SyncTracker], target: str | None) -> None:
        for tracker in trackers:
            self.ops.registry.add_sync(run.host, run.run_id, tracker, target)
            self._loop(run.host, run.run_id, tracker)

    def seen(self, run: RunInfo) -> None:
        """A run's end is its last sync, now rather than at the next interval."""
        event = self._wake.get((run.host, run.run_id))
        if event is not None and is_ended(run.state):
            event.set()

    async def close(self) -> None:
        tasks = list(self._loops.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _loop(self, host: str, run_id: str, tracker: SyncTracker) -> None:
        key = (host, run_id, tracker)
        if key not in self._loops or self._loops[key].done():
            self._wake.setdefault((host, run_id), asyncio.Event())
            self._loops[key] = asyncio.create_task(self._keep(host, run_id, tracker))

    async def _keep(self, host: str, run_id: str, tracker: SyncTracker) -> None:
        wake = self._wake[(host, run_id)]
        while True:
            run = self.ops.known(host, run_id)
            if run is None:
                return  # removed
            ended = is_ended(run.state)
            sync = await self._sync_once(run, tracker)
            # A restart during the last sync: the new attempt is synced by this loop still.
            now = self.ops.known(host, run_id)
            last = ended and sync.error is None and (now is None or is_ended(now.state))
            self.ops.registry.record_sync(host, run_id, sync, done=last)
            self.ops.publish(self.ops.annotate(now or run))
            if last:
                log.info("%s/%s: last %s sync made", host, run_id, tracker)
                return
            wake.clear()
            try:
                async with asyncio.timeout(self.interval):
                    await wake.wait()
            except TimeoutError:
                pass

    async def _sync_once(self, run: RunInfo, tracker: SyncTracker) -> TrackerSync:
        syncs = self.ops.registry.syncs_of(run.host, run.run_id)
        before = next((s.synced_at for s in syncs if s.tracker == tracker), None)
        mirror = state_dir() / "sync" / run.host / run.run_id
        try:
            for path in await self._tracker_paths(run, tracker):
                await self._fetch_one(run, path, mirror)
        except RpcError as error:
            log.info("%s/%s: %s sync: %s", run.host, run.run_id, tracker, error.message)
            if error.kind == Kind.REMOTE_FILE_MISSING:
                # Nothing written yet: not a failure, nothing to import.
                return TrackerSync(tracker, before, None, "nothing written yet")
            return TrackerSync(tracker, before, error.message)
        target = self.ops.registry.sync_target(run.host, run.run_id, tracker)
        summary, error_text = await _import(tracker, mirror, run, target)
        if error_text is not None:
            log.info("%s/%s: %s sync: %s", run.host, run.run_id, tracker, error_text)
            return TrackerSync(tracker, before, error_text)
        log.info("%s/%s: %s sync: %s", run.host, run.run_id, tracker, summary)
        return TrackerSync(tracker, time.time(), None, summary)

    async def _fetch_one(self, run: RunInfo, path: str, mirror: Path) -> None:
        """`path` of the run dir into the mirror (`a/b/c` lands as DEST/c: into the mirror's
        folder of its parent). A W&B run's files/ only as far as a fetch may take it: one
        saved there as a link out of the run dir (`wandb.save`) stays on the host, and the
        run's records sync all the same."""
        into = mirror / posixpath.dirname(path)
        fetched = FetchParams(host=run.host, run_id=run.run_id, path=path, dest=str(into))
        try:
            await fetch(self.ops, fetched, _Quiet())
        except RpcError as error:
            if not (path.endswith("/files") and error.kind == Kind.PATH_OUTSIDE_RUN):
                raise
            log.info("%s/%s: %s stays on the host: %s", run.host, run.run_id, path, error)

    async def _tracker_paths(self, run: RunInfo, tracker: SyncTracker) -> list[str]:
        """The paths of the run dir to fetch: MLflow's whole store; W&B's offline runs'
        transaction logs and files/ (not wandb/ whole: each run's logs/ holds a link to
        W&B's cache outside the run, which a fetch refuses)."""
        if tracker != "wandb":
            return [TRACKER_FILES[tracker]]
        # A fixed argv, no shell: the names found are only read back, checked as paths.
        found = await run_exec(self.ops, ExecParams(run.host, run.run_id, WANDB_FIND))
        logs = [
            validation.fetch_path(line)
            for line in found.stdout.splitlines()
            if line.startswith("wandb/offline-run-") and line.endswith(".wandb")
        ]
        if not logs:
            raise app_error(Kind.REMOTE_FILE_MISSING, "no W&B offline run yet")
        files = [f"{posixpath.dirname(log)}/files" for log in logs]
        return sorted(logs) + [f for f in files if f in found.stdout.splitlines()]


async def _import(
    tracker: SyncTracker, mirror: Path, run: RunInfo, target: str | None
) -> tuple[str, str | None]:
    """Run the importer over the mirror: (what it imported, or why it failed)."""
    source = f"{run.host}:{run.run_id}"
    env = dict(os.environ)
    if target is not None and tracker == "mlflow":
        env["MLFLOW_TRACKING_URI"] = target
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        IMPORTERS[tracker],
        str(mirror / TRACKER_FILES[tracker]),
        str(mirror / f"{tracker}-import-state.json"),
        source,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        # The mirror, not the daemon's `/`: a tracker writes its own logs in its working
        # directory (`wandb sync` makes wandb/ there), and `-m` puts that first on sys.path.
        cwd=mirror,
    )
    try:
        async with asyncio.timeout(IMPORT_TIMEOUT_S):
            out, err = await proc.communicate()
    except (TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        return "", f"importing into {tracker} failed: {lines[-1] if lines else proc.returncode}"
    return out.decode(errors="replace").strip(), None
