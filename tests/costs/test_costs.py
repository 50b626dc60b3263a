"""Costs from a known price and known times: a run's billed time over its attempts (queued
time not billed), a host's uptime and idle time from the monitor's looks, and a registry of
an older version that gains the new columns and tables without losing a run."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from rtrain.daemon.costs import billed_seconds, priced_host, priced_run
from rtrain.daemon.registry import Registry
from rtrain.protocol.messages import Attempt, HostInfo, RunInfo

T0 = 1_800_000_000.0


def run(*attempts: Attempt, state: str = "completed") -> RunInfo:
    return RunInfo(
        host="gpubox",
        run_id="r1",
        state=state,  # type: ignore[arg-type]
        started_at=attempts[0].started_at,
        attempts=list(attempts),
    )


def test_a_run_is_billed_from_launch_to_end_over_every_attempt() -> None:
    first = Attempt(1, "stopped", started_at=T0, ended_at=T0 + 1800, running_at=T0)
    # Queued for ten minutes, then ran for an hour: the queue is not billed.
    second = Attempt(2, "completed", started_at=T0 + 3600, ended_at=T0 + 7800, running_at=T0 + 4200)
    priced = priced_run(run(first, second), 0.22, at=T0 + 99999)
    assert priced.billed_seconds == 1800 + 3600
    assert priced.cost == pytest.approx(1.5 * 0.22)
    assert priced.price_per_hour == 0.22


def test_a_running_attempt_is_billed_to_now_and_a_queued_one_not_at_all() -> None:
    running = Attempt(1, "running", started_at=T0, running_at=T0 + 60)
    assert billed_seconds(run(running, state="running"), at=T0 + 660) == 600
    queued = Attempt(1, "queued", started_at=T0)
    assert billed_seconds(run(queued, state="queued"), at=T0 + 660) == 0


def test_without_a_price_a_run_has_its_time_but_no_cost() -> None:
    priced = priced_run(run(Attempt(1, "failed", T0, T0 + 90, running_at=T0)), None, T0 + 100)
    assert (priced.billed_seconds, priced.cost) == (90, None)


def test_a_host_costs_its_uptime_and_says_how_much_was_idle(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "registry.sqlite3")
    gap = 60.0
    # Each stretch between two looks counts as the first of them found the host.
    registry.saw_host("gpubox", T0, idle=False, gap=gap)
    registry.saw_host("gpubox", T0 + 10, idle=False, gap=gap)
    registry.saw_host("gpubox", T0 + 20, idle=True, gap=gap)
    registry.saw_host("gpubox", T0 + 50, idle=True, gap=gap)
    # Unseen for two minutes (the daemon away): a new span, the time between not counted.
    registry.saw_host("gpubox", T0 + 170, idle=True, gap=gap)
    registry.saw_host("gpubox", T0 + 200, idle=False, gap=gap)
    up, idle, last = registry.host_uptime("gpubox")
    assert (up, idle, last) == (80, 60, T0 + 200)
    assert registry.host_uptime("other") == (0, 0, None)
    info = priced_host(HostInfo(alias="gpubox", connection="connected"), 3.6, up, idle)
    assert (info.up_seconds, info.idle_seconds) == (80, 60)
    assert info.cost == pytest.approx(0.08) and info.idle_cost == pytest.approx(0.06)


def test_a_price_set_for_a_host_is_kept_until_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite3"
    registry = Registry(path)
    registry.set_host_price("gpubox", 0.22)
    registry.close()
    registry = Registry(path)
    assert registry.host_price("gpubox") == 0.22
    registry.set_host_price("gpubox", None)
    assert registry.host_price("gpubox") is None


def test_an_older_registry_gains_the_new_columns_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(
            "CREATE TABLE runs (host TEXT NOT NULL, run_id TEXT NOT NULL, state TEXT NOT NULL,"
            " remote_dir TEXT, workdir TEXT, command TEXT, exit_code INTEGER, signal INTEGER,"
            " created_at REAL, started_at REAL, last_seen REAL, reason TEXT,"
            " PRIMARY KEY (host, run_id));"
            "CREATE TABLE hosts (alias TEXT PRIMARY KEY, transport TEXT, last_error TEXT,"
            " updated REAL);"
            "INSERT INTO runs (host, run_id, state, exit_code, started_at) VALUES"
            " ('gpubox', 'old', 'completed', 0, 1800000000.0);"
        )
        db.commit()
    registry = Registry(path)
    [old] = registry.list()
    assert (old.run_id, old.state, old.exit_code) == ("old", "completed", 0)
    assert (old.max_duration, old.stall_after, old.stalled_since, old.stopped_by) == (
        None,
        None,
        None,
        None,
    )
    limited = RunInfo(host="gpubox", run_id="new", state="running", max_duration=21600)
    registry.upsert(limited)
    assert registry.get("gpubox", "new") == limited
    stored = registry.get("gpubox", "new")
    assert stored is not None
    assert stored.max_duration == 21600  # an int, not text
