"""The client's answers (WireObjects: plain JSON as received) read and print exactly as the
daemon's Structs would: the same JSON bytes as msgspec, the same state lines, the same
defaults for the fields the daemon leaves out."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from rtrain.client.cli.describe import outcome_exit_code
from rtrain.client.cli.json_text import json_text
from rtrain.client.run_state_text import state_text
from rtrain.protocol.messages import LogChunk, RunInfo, TailResult
from rtrain.protocol.wire_object import WireObject

json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
# Times as the daemon keeps them; NaN and infinities never describe a run.
times = st.none() | st.floats(allow_nan=False, allow_infinity=False)
maybe_text = st.none() | st.text()
runs = st.builds(
    RunInfo,
    host=st.text(),
    run_id=st.text(),
    state=st.sampled_from(["running", "completed", "failed", "stopped", "lost", "unknown"]),
    remote_dir=maybe_text,
    log_path=maybe_text,
    workdir=maybe_text,
    command=st.none() | st.lists(st.text(), max_size=3),
    exit_code=st.none() | st.integers(-(2**63), 2**63 - 1),
    signal=st.none() | st.integers(0, 64),
    created_at=times,
    started_at=times,
    last_seen=times,
    reason=maybe_text,
)
chunks = st.builds(
    LogChunk,
    host=st.text(),
    run_id=st.text(),
    offset=st.integers(0, 2**62),
    next_offset=st.integers(0, 2**62),
    text=st.text(),
    rotated=st.booleans(),
)


def as_received(value: Any) -> Any:
    """What the client makes of a message the daemon wrote."""
    return json.loads(msgspec.json.encode(value), object_pairs_hook=WireObject)


def through_full_client(value: Any) -> Any:
    """What a Struct-typed reader makes of the same message."""
    return msgspec.json.decode(msgspec.json.encode(value), type=type(value))


@given(json_data)
def test_json_text_writes_what_msgspec_writes(value: Any) -> None:
    assert json_text(value) == msgspec.json.encode(value).decode()


@given(st.floats() | st.sampled_from([1e16, 1e-5, -1e-5, 9.99e-5, 1e-4, 5e-324, -0.0]))
def test_every_float_is_written_as_msgspec_writes_it(value: float) -> None:
    assert json_text(value) == msgspec.json.encode(value).decode()


@given(runs)
def test_a_received_run_prints_as_the_struct_does(run: RunInfo) -> None:
    quick, full = as_received(run), through_full_client(run)
    assert json_text(quick) == msgspec.json.encode(full).decode()
    assert state_text(quick) == state_text(full)
    assert outcome_exit_code(quick) == outcome_exit_code(full)


@given(chunks, runs)
def test_tail_lines_print_as_the_structs_do(chunk: LogChunk, run: RunInfo) -> None:
    quick_chunk, full_chunk = as_received(chunk), through_full_client(chunk)
    assert quick_chunk.text == full_chunk.text
    assert (
        json_text({"type": "log", **quick_chunk})
        == msgspec.json.encode({"type": "log", **msgspec.to_builtins(full_chunk)}).decode()
    )
    quick_end = as_received(TailResult(run=run, offset=chunk.next_offset))
    full_end = through_full_client(TailResult(run=run, offset=chunk.next_offset))
    assert json_text({"type": "end", "offset": quick_end.offset, "run": quick_end.run}) == (
        msgspec.json.encode(
            {"type": "end", "offset": full_end.offset, "run": msgspec.to_builtins(full_end.run)}
        ).decode()
    )


def test_a_wire_object_reads_like_a_struct() -> None:
    run = as_received(RunInfo(host="h", run_id="r", state="failed", exit_code=3, signal=9))
    assert (run.run_id, run.exit_code, run.signal, run.reason) == ("r", 3, 9, None)
    assert state_text(run) == "failed (exit 3, signal 9)"
    assert dict(run) == {"host": "h", "runId": "r", "state": "failed", "exitCode": 3, "signal": 9}


def test_a_left_out_field_reads_as_the_structs_default() -> None:
    from rtrain.protocol.messages import DaemonInfo, HostInfo, StartResult

    host = as_received(HostInfo(alias="gpubox", connection="connected"))
    assert "runs" not in host  # the daemon leaves defaults out...
    assert (host.runs, host.running, host.transport) == (0, 0, None)  # ...and they read back
    info = DaemonInfo(1, "v", "1.1", 0.0, "s", "d", "l", 0)
    assert as_received(info).notices == [] and as_received(info).settings == {}
    started = as_received(StartResult(run=RunInfo(host="h", run_id="r", state="running")))
    assert started.uploaded_bytes == 0


def test_a_field_named_like_a_dict_method_reads_as_the_field() -> None:
    from rtrain.protocol.messages import Series

    series = as_received(Series(name="loss", steps=[1, 2], values=[0.5, 0.25]))
    assert series.values == [0.5, 0.25]
    assert json_text(series) == msgspec.json.encode(series).decode()
    assert list(as_received(RunInfo(host="h", run_id="r", state="running")).values())[:2] == [
        "h",
        "r",
    ]
