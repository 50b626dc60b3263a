"""A host's guard in words: the lines of `rtrain guard HOST` and the cell of `rtrain hosts`."""

from __future__ import annotations

import time
from typing import Any

from rtrain.protocol.durations import human_duration

from .describe import when
from .terminal_text import safe_for_terminal


def guard_words(guard: Any, now: float | None = None) -> list[str]:
    """A guard's state in plain words, a line each: armed or not, with what; idle for how
    long and when it acts, or busy and why; its last firing."""
    now = time.time() if now is None else now
    if not guard.armed:
        lines = ["disarmed"]
    else:
        sessions = "open ssh sessions ignored" if guard.ignore_sessions else "ssh sessions count"
        if guard.stalled_idle:
            sessions += ", stalled runs idle"
        lines = [
            f"armed: after {human_duration(guard.idle_seconds or 0)} idle it runs "
            f"`{guard.command}` ({sessions})"
        ]
        if guard.busy:
            lines.append(f"busy: {guard.busy}")
        elif guard.idle_since is not None:
            idle = f"idle for {human_duration(now - guard.idle_since)}"
            if guard.acts_at is None:
                lines.append(f"{idle}; it ran the command for this idle period already")
            elif guard.acts_at > now:
                lines.append(f"{idle}; acts in {human_duration(guard.acts_at - now)}")
            else:
                lines.append(f"{idle}; acts at its next look")
        else:
            lines.append("not looked at the host yet")
    fired = guard.last_fired
    if fired is not None:
        lines.append(f"last fired {when(fired.at)} (exit {fired.exit_code})")
    return [safe_for_terminal(line) for line in lines]


def guard_cell(guard: Any, now: float | None = None) -> str:
    """A guard in one short cell of `rtrain hosts`."""
    now = time.time() if now is None else now
    if guard is None:
        return "-"
    if not guard.armed:
        return "off"
    if guard.busy:
        return "armed, busy"
    if guard.idle_since is not None and guard.acts_at is not None:
        return f"armed, acts in {human_duration(max(0.0, guard.acts_at - now))}"
    if guard.idle_since is not None:
        return "armed, fired"
    return "armed"
