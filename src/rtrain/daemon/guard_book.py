"""What the daemon knows of its hosts' guards: the last state read from each (for `hosts/list`
and the sidebar), and the guard config.toml asks for (`idle_stop` with `terminate`), armed
once per daemon as a run is launched on the host (and before `rtrain guard` acts) when the
host's guard has other settings.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from rtrain.daemon.remote.contract import guard_scripts
from rtrain.daemon.remote.contract.guard_scripts import GuardShown
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.messages import GuardFired, GuardState

log = logging.getLogger(__name__)


def guard_state(shown: GuardShown, received_at: float) -> GuardState:
    """guard.sh's answer in the daemon's clock: the host's times moved by the difference
    between the host's `now` and the moment the answer arrived (off by at most the time the
    answer took to come back)."""
    shift = received_at - shown.now if shown.now is not None else 0.0

    def here(moment: float | None) -> float | None:
        return None if moment is None else round(moment + shift, 3)

    seen = shown.seen
    last = shown.last
    idle_since = seen.idle_since if seen is not None and not seen.busy else None
    acts_at = None
    if shown.armed and idle_since is not None and shown.idle_seconds is not None:
        # Once per idle period: a firing for this one means it waits for the next.
        if last is None or last.idle_since != idle_since:
            acts_at = here(idle_since + shown.idle_seconds)
    return GuardState(
        armed=shown.armed,
        at=round(received_at, 3),
        idle_seconds=shown.idle_seconds,
        command=shown.command,
        ignore_sessions=bool(shown.ignore_sessions),
        stalled_idle=bool(shown.stalled_idle),
        checked_at=here(seen.checked_at) if seen is not None else None,
        idle_since=here(idle_since),
        busy=seen.reason if seen is not None and seen.busy else None,
        acts_at=acts_at,
        last_fired=GuardFired(at=here(last.at) or 0.0, exit_code=last.exit_code)
        if last is not None
        else None,
    )


def flat(command: str) -> str:
    """A command as guard.sh shows it: tabs and line breaks as spaces."""
    return command.translate(str.maketrans("\t\r\n", "   "))


class GuardBook:
    def __init__(self) -> None:
        # host -> (work directory, its guard as last read)
        self._states: dict[str, tuple[str, GuardState]] = {}
        # Hosts whose configured guard this daemon has seen to (or a person has, since).
        self._seen_to: set[str] = set()
        self._arming: dict[str, asyncio.Task[None]] = {}

    def remember(self, host: str, workdir: str, state: GuardState) -> None:
        self._states[host] = (workdir, state)

    def last(self, host: str) -> tuple[str, GuardState] | None:
        """The guard of `host` last read (of the work directory last asked about)."""
        return self._states.get(host)

    def reached(
        self,
        host: str,
        connect: Callable[[str], Awaitable[Transport]],
        workdir: str,
        idle_seconds: int,
        command: str,
        stalled_idle: bool,
    ) -> None:
        """A run was launched on the host: arm its configured guard, in the background,
        unless this daemon already did (or a person chose otherwise through `host/guard`)."""
        if host in self._seen_to or host in self._arming:
            return
        task = asyncio.create_task(
            self._arm_configured(host, connect, workdir, idle_seconds, command, stalled_idle)
        )
        self._arming[host] = task
        task.add_done_callback(lambda _: self._arming.pop(host, None))

    async def settled(self, host: str) -> None:
        """Wait for the configured guard's arming on `host`, so a person's own `host/guard`
        acts after it, never before; from then on this daemon leaves the guard to them."""
        task = self._arming.get(host)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        self._seen_to.add(host)

    async def _arm_configured(
        self,
        host: str,
        connect: Callable[[str], Awaitable[Transport]],
        workdir: str,
        idle_seconds: int,
        command: str,
        stalled_idle: bool,
    ) -> None:
        try:
            transport = await connect(host)
            shown = await guard_scripts.guard_show(transport, workdir)
            if shown.ok and (
                shown.armed
                and shown.idle_seconds == idle_seconds
                and shown.ignore_sessions is False
                and bool(shown.stalled_idle) == stalled_idle
                and shown.command == flat(command)
            ):
                self._seen_to.add(host)
                self.remember(host, workdir, guard_state(shown, time.time()))
                return
            shown = await guard_scripts.guard_arm(
                transport, workdir, idle_seconds, False, command, stalled_idle
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            # Tried again at the next launch on the host.
            log.warning("%s: arming the configured guard failed: %s", host, error)
            return
        if not shown.ok or not shown.armed:
            log.warning("%s: arming the configured guard failed: %s", host, shown.error_text)
            return
        log.info("%s: armed the guard config.toml asks for (%d s idle)", host, idle_seconds)
        self._seen_to.add(host)
        self.remember(host, workdir, guard_state(shown, time.time()))
