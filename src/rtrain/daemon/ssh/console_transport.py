"""The `console` transport: hosts whose SSH gateway only offers an interactive terminal.

No exec channel, no sftp, no scp, no forwarding: just `ssh -tt host` and a login shell, like
RunPod's proxy. The daemon keeps a ControlMaster to the gateway (supervised like any other
master) and opens console sessions through it; each session's shell is replaced by a small
agent (console_agent.py) that runs the very same far-side scripts as the exec transport,
`sh -c SCRIPT rtrain ARGS...`, with stdin, stdout, stderr and exit status carried as
checksummed base64 between random markers. Files move as checksummed chunks, one request
each (daemon/transfer/console_chunks.py, through `execute`).

Operations may run concurrently: each takes a console of its own, up to MAX_SESSIONS; more
wait. A console that times out or breaks is closed (its shell gets SIGHUP) and replaced on
the next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

from rtrain.daemon.remote import script
from rtrain.daemon.transports.transport import Completed, Transport
from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import ConnectionState

from .console_framing import Request
from .console_session import ConsoleLost, ConsoleSession
from .control_master import ControlMaster
from .options import base_args

log = logging.getLogger(__name__)

# Consoles per host: a transfer uses three at once (console_chunks.WINDOW), the fourth keeps
# a status or a tail going meanwhile.
MAX_SESSIONS = 4
# Newer ssh clients pace "keystrokes" of a terminal session; rtrain's input is not typing.
KEYSTROKE_OPTION = "ObscureKeystrokeTiming=no"


class ConsoleTransport(Transport):
    kind = "console"

    def __init__(self, alias: str, runtime_dir: Path, config: Path | None) -> None:
        self.alias = alias
        self.config = config
        self.master = ControlMaster(alias, runtime_dir, config)
        self._idle: list[ConsoleSession] = []
        self._sessions: set[ConsoleSession] = set()
        self._limit = MAX_SESSIONS
        self._changed = asyncio.Condition()
        self._damaged_closed = 0
        self._error: str | None = None
        self._extra_options: list[str] | None = None

    # -- Transport ----------------------------------------------------------------------

    async def connect(self) -> None:
        await self.master.ensure()
        if not self._sessions:
            # Proves the console works (and keeps it for the first operation).
            session = await self._acquire()
            await self._release(session)

    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        return await self.execute(
            Request.of(script(name), args, stdin), timeout, name, idempotent=False
        )

    async def close(self) -> None:
        sessions = list(self._sessions)
        idle = set(self._idle)
        self._sessions.clear()
        self._idle.clear()
        await asyncio.gather(*(session.close(idle=session in idle) for session in sessions))
        await self.master.close()

    @property
    def state(self) -> ConnectionState:
        return self.master.state

    @property
    def last_error(self) -> str | None:
        return self._error or self.master.last_error

    # -- what the transfer engine's console chunks need ------------------------------------

    @property
    def damaged(self) -> int:
        return self._damaged_closed + sum(session.damaged for session in self._sessions)

    async def execute(
        self, request: Request, timeout: float, what: str, *, idempotent: bool
    ) -> Completed:
        """Run one request on a console. A console that broke before the command could have
        started (or, for an `idempotent` one, at any point) is replaced and the request sent
        once more."""
        for attempt in (1, 2):
            session = await self._acquire()
            try:
                result = await session.execute(request, timeout, what)
            except ConsoleLost as lost:
                await self._discard(session)
                self._error = lost.error.message
                if attempt == 2 or (lost.ran and not idempotent):
                    raise lost.error from None
                log.info("%s: console lost (%s); trying a fresh one", self.alias, lost)
                continue
            except RpcError:
                await self._release(session)
                raise
            except BaseException:
                # Cancelled mid-request: what the console does next is unknown.
                await self._discard(session)
                raise
            await self._release(session)
            self._error = None
            return result
        raise AssertionError("unreachable")

    # -- the pool of consoles ---------------------------------------------------------------

    async def _acquire(self) -> ConsoleSession:
        async with self._changed:
            while True:
                while self._idle:
                    session = self._idle.pop()
                    if session.alive:
                        return session
                    await self._forget(session)
                if len(self._sessions) < self._limit:
                    break
                await self._changed.wait()
            session = ConsoleSession(self.alias, await self._argv())
            self._sessions.add(session)
        try:
            await self.master.ensure()
        except BaseException as error:
            await self._discard(session)
            if isinstance(error, RpcError):
                self._error = error.message
            raise
        try:
            await session.open()
        except BaseException as error:
            async with self._changed:
                await self._forget(session)
                if not self._sessions or not isinstance(error, RpcError):
                    if isinstance(error, RpcError):
                        self._error = error.message
                    raise
                # The master is fine but no further console opens next to the ones open:
                # share those (until none is left, then try for more again).
                self._limit = len(self._sessions)
                log.info("%s: %d console(s) at once (%s)", self.alias, self._limit, error)
                self._changed.notify_all()
            return await self._acquire()
        return session

    async def _release(self, session: ConsoleSession) -> None:
        async with self._changed:
            if session.alive and session in self._sessions:
                self._idle.append(session)
            else:
                await self._forget(session)
            self._changed.notify()

    async def _discard(self, session: ConsoleSession) -> None:
        await session.close()
        async with self._changed:
            await self._forget(session)
            self._changed.notify()

    async def _forget(self, session: ConsoleSession) -> None:
        if session in self._sessions:
            self._sessions.discard(session)
            self._damaged_closed += session.damaged
        if not self._sessions:
            self._limit = MAX_SESSIONS
        with contextlib.suppress(ValueError):
            self._idle.remove(session)
        await session.close()

    async def _argv(self) -> list[str]:
        if self._extra_options is None:
            self._extra_options = await _keystroke_options()
        return [
            "ssh",
            *base_args(self.config),
            *self._extra_options,
            "-o",
            f"ControlPath={self.master.path}",
            "-o",
            "ControlMaster=no",
            # A console exists only inside the supervised connection: where the master is gone
            # or refuses it, ssh must fail rather than connect on its own.
            "-o",
            "ProxyCommand=false",
            # Data lines must never be taken for `~.` and friends.
            "-o",
            "EscapeChar=none",
            "-tt",
            self.alias,
        ]


async def _keystroke_options() -> list[str]:
    """`-o ObscureKeystrokeTiming=no` where this ssh knows the option (OpenSSH 9.5+)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "ssh",
            "-G",
            "-F",
            "/dev/null",
            "-o",
            KEYSTROKE_OPTION,
            "rtrain-option-probe",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        code = await asyncio.wait_for(proc.wait(), 10)
    except (OSError, TimeoutError):
        return []
    return ["-o", KEYSTROKE_OPTION] if code == 0 else []
