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
