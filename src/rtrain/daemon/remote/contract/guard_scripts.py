"""The host's guard: guard.sh, guard_loop.sh's one-shot modes (host_look, terminate),
and the transfers' leases (lease.sh)."""

from __future__ import annotations

import logging

import msgspec

from rtrain.daemon.remote import script
from rtrain.daemon.remote.error_words import ErrorWord, FarError

from .answers import (
    Answer,
    Completed,
    Exit,
    Lines,
    Runner,
    as_float,
    as_int,
    said,
)

log = logging.getLogger(__name__)


# ---- guard.sh, guard_loop.sh's one-shot modes, lease.sh -----------------------------------


class GuardSeen(msgspec.Struct, frozen=True, kw_only=True):
    """The guard's last look at the host (host clock): idle since `idle_since`, or busy
    because of `reason`."""

    busy: bool
    checked_at: float
    idle_since: float | None
    reason: str | None


class GuardFiring(msgspec.Struct, frozen=True, kw_only=True):
    """The guard's last run of its command: when it ended, its exit status, and the idle
    period it was for (host clock)."""

    at: float
    exit_code: int | None
    idle_since: float | None


class GuardShown(Answer, frozen=True, kw_only=True):
    """guard.sh's `show` (also the answer of `arm` and `off`). `now` is the host's clock, so
    the daemon can read the host's times against its own."""

    armed: bool
    pid: int | None
    idle_seconds: int | None
    ignore_sessions: bool | None
    # A stalled run counts as idle (the host opted in).
    stalled_idle: bool | None
    # Flattened (line breaks as spaces): for showing, not for running.
    command: str | None
    seen: GuardSeen | None
    last: GuardFiring | None
    now: float | None
    error: FarError | None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.now is not None


def _guard_shown(done: Completed) -> GuardShown:
    lines = Lines(done.stdout)
    settings = lines.last("settings") or []
    seen = lines.last("seen")
    last = lines.last("last")
    seen_row = None
    if seen and len(seen) >= 3 and seen[0] in ("idle", "busy") and as_float(seen[1]) is not None:
        busy = seen[0] == "busy"
        seen_row = GuardSeen(
            busy=busy,
            checked_at=as_float(seen[1]) or 0.0,
            idle_since=None if busy else as_float(seen[2]),
            reason=seen[2] if busy else None,
        )
    last_row = None
    if last and as_float(last[0]) is not None:
        last_row = GuardFiring(
            at=as_float(last[0]) or 0.0,
            exit_code=as_int(last[1]) if len(last) > 1 else None,
            idle_since=as_float(last[2]) if len(last) > 2 else None,
        )
    return GuardShown(
        armed=lines.value("guard") == "armed",
        pid=as_int(lines.value("pid")),
        idle_seconds=as_int(settings[0]) if settings else None,
        ignore_sessions=settings[1] == "1" if len(settings) > 1 else None,
        stalled_idle=settings[2] == "1" if len(settings) > 2 else None,
        command=lines.value("command"),
        seen=seen_row,
        last=last_row,
        now=as_float(lines.value("now")),
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


async def guard_show(transport: Runner, workdir: str) -> GuardShown:
    done = await transport.run("guard", [workdir, "show"], timeout=60)
    return _guard_shown(done)


async def guard_arm(
    transport: Runner,
    workdir: str,
    idle_seconds: int,
    ignore_sessions: bool,
    command: str,
    stalled_idle: bool = False,
) -> GuardShown:
    """(Re)arm the guard of `workdir`; its loop's text (guard_loop.sh after its libraries) goes on
    stdin, so nothing of rtrain has to be installed on the host."""
    flags = ["1" if ignore_sessions else "0", command, "1" if stalled_idle else "0"]
    done = await transport.run(
        "guard",
        [workdir, "arm", str(idle_seconds), *flags],
        stdin=script("guard_loop").encode(),
        timeout=60,
    )
    return _guard_shown(done)


async def guard_off(transport: Runner, workdir: str) -> GuardShown:
    done = await transport.run("guard", [workdir, "off"], timeout=60)
    return _guard_shown(done)


class HostLook(Answer, frozen=True, kw_only=True):
    """The guard's look, taken now: `busy` says why the host is not idle; None when it is."""

    busy: str | None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK


async def host_look(transport: Runner, workdir: str, ignore_sessions: bool) -> HostLook:
    done = await transport.run(
        "guard_loop", [workdir, "look", "1" if ignore_sessions else "0"], timeout=60
    )
    lines = Lines(done.stdout)
    busy = lines.value("busy")
    if done.returncode == Exit.OK and busy is None and "idle" not in lines:
        # Anything the guard cannot tell counts as busy, never as idle.
        busy = "the host did not say whether it is idle"
    return HostLook(busy=busy, exit=done.returncode, error_text=done.error_text)


class Terminated(Answer, frozen=True, kw_only=True):
    """guard_loop.sh's `terminate`: refused (`busy`, the reason), no command to run
    (`no_command`), or the command started (`started_at`, host clock) and then ended
    (`exit_code`, the last lines of its `output`) or still `running` after the wait."""

    busy: str | None
    no_command: bool
    started_at: float | None
    # What it ran, flattened (line breaks as spaces).
    command: str | None
    exit_code: int | None
    output: list[str]
    running: bool
    error: FarError | None


async def terminate(
    transport: Runner, workdir: str, command: str | None, *, force: bool, wait: int
) -> Terminated:
    """Run the host's terminate command now (`command`, else the one the guard was armed
    with), unless a run or a transfer keeps the host busy and not `force`."""
    args = [workdir, "terminate", "1" if force else "0", str(wait)]
    args += ["given", command] if command is not None else ["armed"]
    done = await transport.run("guard_loop", args, timeout=wait + 60)
    lines = Lines(done.stdout)
    error = lines.error()
    started = lines.value("started")
    return Terminated(
        busy=error.arg or None if error and error.word == ErrorWord.BUSY else None,
        no_command=said(lines, ErrorWord.NO_COMMAND),
        started_at=as_float(started),
        command=lines.value("command"),
        exit_code=as_int(lines.value("exit")),
        output=[row[0] if row else "" for row in lines.rows("output")],
        running="running" in lines,
        error=error,
        exit=done.returncode,
        error_text=done.error_text,
    )


class Leased(Answer, frozen=True, kw_only=True):
    """lease.sh: the lease holds until `expires_at` (host clock), or was `dropped`."""

    expires_at: float | None
    dropped: bool

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and (self.expires_at is not None or self.dropped)


async def lease(transport: Runner, workdir: str, token: str, seconds: int) -> Leased:
    """Take or renew the transfer lease `token` for `seconds`; 0 drops it."""
    done = await transport.run("lease", [workdir, token, str(seconds)], timeout=30)
    lines = Lines(done.stdout)
    held = lines.last("lease")
    return Leased(
        expires_at=as_float(held[1]) if held and len(held) > 1 else None,
        dropped="dropped" in lines,
        exit=done.returncode,
        error_text=done.error_text,
    )
