"""What a status row means is read once, in the contract: a stop the run's limits made
comes out as typed fields, not a prefix an operation parses out of the detail."""

from __future__ import annotations

from rtrain.daemon.remote.contract.run_scripts import run_row


def test_a_stop_by_a_limit_is_typed() -> None:
    row = run_row(["r1", "stopped", "137", "9", "17", "limit: max_duration 21600"])
    assert (row.stopped_by, row.limit_seconds) == ("max_duration", 21600)
    row = run_row(["r1", "stopped", "-", "-", "-", "limit: stalled 1800"])
    assert (row.stopped_by, row.limit_seconds) == ("stall", 1800)


def test_anything_else_is_no_limit() -> None:
    for state, detail in [
        ("stopped", "stopped on request; no exit status"),
        ("stopped", "limit: gravity 10"),
        ("stopped", "limit: max_duration soon"),
        ("failed", "limit: max_duration 60"),
    ]:
        row = run_row(["r1", state, "-", "-", "-", detail])
        assert (row.stopped_by, row.limit_seconds, row.detail) == (None, None, detail)
