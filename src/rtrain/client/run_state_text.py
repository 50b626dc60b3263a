"""A run's state in words, as the CLI prints it and the Python API returns it."""

from __future__ import annotations

import time
from typing import Any

from rtrain.protocol.durations import human_duration
from rtrain.protocol.run_states import is_ended, shows_reason


def state_text(run: Any) -> str:
    """`running`, `completed`, `failed (exit 3)`, `failed (exit 1, ValueError: bad)`,
    `failed (exit 1, rank 1: ...)`, `failed (exit 137, killed by SIGKILL)`, `unknown (host
    unreachable: ...)`, and for a scheduler's job its own word where it says more: `failed
    (TIMEOUT)`, `stopped (CANCELLED)`, `queued (waiting for ...)`; a run's limits say their
    part: `running (stalled 12m)`, `stopped (max duration 6h)`."""
    stalled_since = getattr(run, "stalled_since", None)
    if run.state == "running" and stalled_since is not None:
        return f"running (stalled {human_duration(time.time() - stalled_since)})"
    if run.state == "stopped" and getattr(run, "stopped_by", None) and run.reason:
        return f"stopped ({run.reason})"
    scheduler_state = getattr(run, "scheduler_state", None)
    if scheduler_state and is_ended(run.state) and run.state != "completed":
        return f"{run.state} ({scheduler_state})"
    if run.state == "failed":
        if run.reason in ("setup", "program not found"):
            return f"failed ({run.reason}, exit {run.exit_code})"
        if run.reason and run.reason.startswith("environment: "):
            return f"failed ({run.reason})"  # the environment's build: its line says why
        # Why, as the far side read it: the rank that failed first, the signal that killed
        # the run, the last exception line or last line of the log.
        said = [f"exit {run.exit_code}"] if run.exit_code is not None else []
        if run.reason:
            said.append(run.reason)
        elif run.signal:
            said.append(f"signal {run.signal}")
        return f"failed ({', '.join(said)})" if said else "failed"
    if shows_reason(run.state) and run.reason:
        return f"{run.state} ({run.reason})"
    return str(run.state)


# A running run whose log has been still this long says so (`last output 45s ago`): most
# trainers print every few seconds, and the daemon reads a running run's log about as often
# (poll_interval), so a shorter silence would be noise.
SILENT_AFTER = 30.0


def silence_text(run: Any, now: float | None = None) -> str:
    """`last output 45s ago` for a running run silent SILENT_AFTER seconds or more; "" else
    (and for a stalled run, whose state says more)."""
    at = getattr(run, "last_output_at", None)
    if run.state != "running" or at is None or getattr(run, "stalled_since", None) is not None:
        return ""
    quiet = (time.time() if now is None else now) - at
    return f"last output {human_duration(quiet)} ago" if quiet >= SILENT_AFTER else ""


def state_with_silence(run: Any) -> str:
    """`running (last output 45s ago)`, or the state as `state_text` says it."""
    silence = silence_text(run)
    return f"{run.state} ({silence})" if silence else state_text(run)


# A table's STATE column: a state with a reason this long or longer is cut (`rtrain status`
# says it whole); a run failing with a traceback's last line still shows most of it.
TABLE_STATE = 80


def table_state_text(run: Any) -> str:
    """`state_with_silence`, cut to TABLE_STATE characters for a table's column."""
    return cut_text(state_with_silence(run), TABLE_STATE)


def cut_text(text: str, width: int) -> str:
    """`text`, or its first characters and `…` (and the `)` it opened) to fit `width`."""
    if len(text) <= width:
        return text
    closes = "(" in text and text.endswith(")")
    head = text[: width - (2 if closes else 1)].rstrip(" ,:;(")
    return head + ("…)" if closes else "…")


def attempt_text(attempt: Any) -> str:
    """`2`, or `2 (retry 1 of 3: attempt 1 ended lost (...))`: an attempt's number, and why
    the daemon started it where it did so itself."""
    cause = getattr(attempt, "cause", None)
    return f"{attempt.number} ({cause})" if cause else str(attempt.number)
