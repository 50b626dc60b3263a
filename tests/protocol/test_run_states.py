"""One home for a run's states: the words, the predicates, the one transition function, and
no other module that keeps a set of states of its own."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

import rtrain
from rtrain.daemon.remote.contract.run_scripts import run_row
from rtrain.protocol import run_states
from rtrain.protocol.messages import RunInfo
from rtrain.protocol.run_states import (
    RUN_STATES,
    FarSide,
    HostSilent,
    Vanished,
    is_active,
    is_billed,
    is_ended,
    is_live,
    is_settled,
    next_state,
)

PACKAGE = Path(rtrain.__file__).parent


def test_the_wire_type_is_the_one_of_the_module() -> None:
    assert RunInfo.__annotations__["state"] in ("RunState", run_states.RunState)
    assert set(RUN_STATES) == {
        "queued",
        "running",
        "completed",
        "failed",
        "stopped",
        "lost",
        "unknown",
    }


def test_the_predicates_agree_with_each_other() -> None:
    for state in RUN_STATES:
        assert is_active(state) != is_ended(state), state
        if is_live(state):
            assert is_active(state), state
        if is_settled(state):
            assert is_ended(state), state
    assert [s for s in RUN_STATES if is_active(s)] == ["queued", "running", "unknown"]
    assert [s for s in RUN_STATES if is_live(s)] == ["queued", "running"]
    assert [s for s in RUN_STATES if not is_settled(s) and is_ended(s)] == ["lost"]
    assert [s for s in RUN_STATES if not is_billed(s)] == ["queued", "unknown"]
    assert [s for s in RUN_STATES if run_states.is_writing(s)] == ["running", "unknown"]
    assert run_states.ACTIVE_STATES == ("queued", "running", "unknown")


def test_unknown_is_never_guessed() -> None:
    assert next_state(HostSilent()) == "unknown"
    assert next_state(FarSide("PAUSED")) == "unknown"
    assert next_state(FarSide("")) == "unknown"
    for state in RUN_STATES:
        assert next_state(FarSide(state)) == state


def test_gone_only_after_a_second_look() -> None:
    assert next_state(Vanished(looks=1)) is None
    assert next_state(Vanished(looks=2)) == "lost"


def test_a_far_state_word_is_checked_where_it_enters(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        row = run_row(["r1", "hibernating", "-", "-", "-", "-"])
    assert (row.state, row.exists) == ("unknown", True)
    assert "hibernating" in caplog.text
    assert run_row(["r1", "missing"]).exists is False
    assert run_row(["r1", "completed", "0"]).state == "completed"


def _state_collections(path: Path) -> list[str]:
    """Tuples, lists and sets written in `path` that hold two or more run-state words."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            words = [
                e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in RUN_STATES
            ]
            if len(words) >= 2:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {words}")
    return found


def test_no_module_but_run_states_keeps_a_set_of_states() -> None:
    home = Path(run_states.__file__).resolve()
    offenders = []
    for layer in ("protocol", "daemon", "client"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            if path.resolve() == home or path.name == "requests.py":
                continue  # requests.py: the generated copy of the wire type for the client
            offenders += _state_collections(path)
    assert offenders == []


def test_a_settled_attempt_keeps_its_state_and_a_new_attempt_takes_any() -> None:
    for before in RUN_STATES:
        for after in RUN_STATES:
            kept = run_states.advance(before, after, new_attempt=False)
            if is_settled(before):
                assert kept == before, (before, after)
            else:
                assert kept == after, (before, after)
            assert run_states.advance(before, after, new_attempt=True) == after
            assert run_states.advance(None, after, new_attempt=False) == after


def test_every_ending_reads_as_an_ended_state_and_says_whether_it_is_retried() -> None:
    for ending in run_states.ENDINGS:
        assert is_ended(run_states.ending_rule(ending).state), ending
    for state in RUN_STATES:
        plain = run_states.ending_of(state)
        assert (plain is None) == (not is_ended(state)), state
        if plain is not None:
            assert run_states.ending_rule(plain).state == state
    # What a retry policy starts again: a vanished run on either policy, a failed one only
    # on `failed`; never a stop, a limit's stop, or a run that never launched.
    retried = {
        (ending, on)
        for ending in run_states.ENDINGS
        for on in run_states.RETRY_ON
        if run_states.is_retried(ending, on)
    }
    assert retried == {("vanished", "lost"), ("vanished", "failed"), ("exited", "failed")}
    assert not run_states.is_retried(None, "failed")
    # What was said wins only where it agrees with the state.
    assert run_states.ending_of("lost", "never_launched") == "never_launched"
    assert run_states.ending_of("failed", "never_launched") == "exited"
    assert run_states.ending_of("running", "stall") is None


def test_a_rows_ending_is_read_once_in_the_contract() -> None:
    assert run_row(["r1", "lost", "-", "-", "-", "never launched"]).ending == "never_launched"
    assert run_row(["r1", "lost", "-", "-", "-", "no status"]).ending is None
    assert run_row(["r1", "stopped", "-", "-", "-", "limit: stalled 60"]).ending == "stall"
    limited = run_row(["r1", "stopped", "-", "-", "-", "limit: max_duration 60"])
    assert limited.ending == "max_duration"


def test_only_the_recording_of_a_run_writes_its_state() -> None:
    # Ops.record applies the table (run_states.advance); nothing else writes a run's row.
    writers = []
    for path in sorted((PACKAGE / "daemon").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "upsert":
                writers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert len(writers) == 1 and writers[0].startswith("daemon/operations/context.py:"), writers
    record = (PACKAGE / "daemon" / "operations" / "context.py").read_text()
    assert "advance(" in record


def test_a_run_recorded_before_endings_is_retried_as_its_state_says() -> None:
    from rtrain.daemon.run_retries import due
    from rtrain.protocol.messages import RetryPolicy

    policy = RetryPolicy(limit=2, on="lost")
    lost = RunInfo(host="h", run_id="r", state="lost", retry=policy)
    assert due(lost)
    assert not due(
        RunInfo(host="h", run_id="r", state="lost", ending="never_launched", retry=policy)
    )
    assert not due(RunInfo(host="h", run_id="r", state="failed", retry=policy))
