"""One console: an `ssh -tt` session whose shell was replaced by the agent, one request at a time.

A request whose blocks arrived damaged (`B`) is sent again; so is an answer that arrived
damaged (`A`), up to MAX_TRIES each, after which the caller gets a loud error. When an
acknowledgement or an answer does not come, the agent is asked about the request (`A`) before
anything is concluded: a marker line can be damaged too. A console that stops answering is
given up (`ConsoleLost`); `ran` then tells the caller whether the command may have started,
i.e. whether sending it again on a fresh console is safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import time
from collections import deque

from rtrain.daemon.transports.transport import Completed
from rtrain.protocol.errors import Kind, RpcError, app_error

from .console_agent import boot_line, boot_message, bootstrap_line
from .console_framing import (
    Marker,
    MarkerScanner,
    Request,
    again,
    leave,
    sha256_hex,
)
from .console_noise import base64_payload
from .failures import classify
from .options import CONNECT_TIMEOUT

log = logging.getLogger(__name__)

MAX_TRIES = 5
# The login shell may still be starting when the bootstrap line is typed; type it again
# after these many seconds without an answer (a line it swallowed is then not fatal).
NUDGES = (3.0, 8.0)
FIRST_TYPE_AFTER = 1.0
OPEN_TIMEOUT = CONNECT_TIMEOUT + 20.0
# A request must be acknowledged within this, plus its size at a pessimistic rate.
ACK_SLACK = 30.0
SLOW_RATE = 50_000.0
# An answer that is still arriving is not timed out until this long without a byte.
STALL = 30.0
# How long an idle agent may take to say what became of a request (see _probe).
PROBE = 5.0
READ_SIZE = 1 << 20
# An idle console asked to leave gets this long before ssh is ended.
LEAVE_TIMEOUT = 2.0


class ConsoleLost(Exception):
    """The console broke during a request. `ran`: the command may have started."""

    def __init__(self, error: RpcError, ran: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.ran = ran


class _Timeout(Exception):
    pass


class _Ended(Exception):
    def __init__(self, error: RpcError) -> None:
        super().__init__(error.message)
        self.error = error


class ConsoleSession:
    def __init__(self, alias: str, argv: list[str]) -> None:
        self.alias = alias
        self.argv = argv
        # Requests and answers that arrived damaged and were sent again.
        self.damaged = 0
        self._token = secrets.token_hex(8)
        self._scanner = MarkerScanner(self._token)
        self._markers: deque[Marker] = deque()
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._drain_stderr: asyncio.Task[None] | None = None
        self._writing: asyncio.Future[None] | None = None
        self._broken = False
        self._seq = 0
        self._scripts: set[str] = set()
        self._last_byte = 0.0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and not self._broken

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def open(self) -> None:
        """Start ssh, turn the login shell into the agent; raises the classified error."""
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Its own process group: close() ends ssh and anything a wrapper put around it.
            start_new_session=True,
        )
        self._drain_stderr = asyncio.create_task(self._collect_stderr())
        try:
            await self._bootstrap()
        except (ConsoleLost, _Ended) as failed:
            await self.close()
            raise failed.error from None
        except BaseException:
            await self.close()
            raise

    async def _bootstrap(self) -> None:
        start = time.monotonic()
        deadline = start + OPEN_TIMEOUT
        try:
            # Typed too early, the line can be lost: sshd may write it to the terminal before
            # the session has set the terminal up (vhangup flushes it). The first thing the far
            # side prints (a banner, a prompt) says it is past that.
            await self._next(0, "R", start + FIRST_TYPE_AFTER, any_byte=True)
        except _Timeout:
            pass  # a silent gateway
        line = bootstrap_line(self._token)
        self._write(line)
        for nudge in (*NUDGES, None):
            try:
                await self._next(0, "R", deadline if nudge is None else start + nudge)
                break
            except _Timeout:
                if nudge is None:
                    raise ConsoleLost(
                        self._no_answer("the login shell never started rtrain's agent"), False
                    ) from None
            log.info("%s: console has not answered yet; typing the start line again", self.alias)
            self._write(line)
        # The agent goes only once the loader has its length: a shell's `read` may read
        # ahead on a terminal and would swallow whatever followed the line.
        self._write(boot_line(self._token))
        try:
            await self._next(0, "L", time.monotonic() + ACK_SLACK)
            self._write(boot_message(self._token))
            marker = await self._next(0, "YX", time.monotonic() + ACK_SLACK)
        except _Timeout:
            raise ConsoleLost(self._no_answer("rtrain's agent did not start"), False) from None
        if marker.kind == "X":
            reason = ":".join(marker.fields) or "unknown reason"
            error = app_error(
                Kind.REMOTE_FAILED, f"{self.alias}: the console cannot run rtrain: {reason}"
            )
            raise ConsoleLost(error, False)

    async def execute(self, request: Request, timeout: float, what: str) -> Completed:
        """Run `request` once; its output, whatever its exit status."""
        try:
            await self._deliver(request)
        except _Ended as ended:
            raise ConsoleLost(ended.error, False) from None
        deadline = time.monotonic() + timeout
        probed = False
        damaged = 0
        while True:
            try:
                answer = await self._answer(deadline)
            except _Ended as ended:
                raise ConsoleLost(ended.error, True) from None
            except _Timeout:
                if probed:
                    await self.close()
                    raise ConsoleLost(
                        app_error(
                            Kind.TIMEOUT,
                            f"{self.alias}: {what} took longer than {timeout:.0f} s "
                            "(is the host or the connection stalled?)",
                        ),
                        True,
                    ) from None
                # Done, with its end marker damaged? An idle agent answers again at once.
                probed = True
                self._write(again(self._seq))
                deadline = time.monotonic() + PROBE
                continue
            if answer is not None:
                return answer
            damaged += 1
            self.damaged += 1
            if damaged >= MAX_TRIES:
                raise app_error(
                    Kind.TRANSFER_FAILED,
                    f"{self.alias}: the console damaged the answer to {what} {damaged} times in "
                    "a row; it ran, but its output could not be read intact.",
                )
            log.warning("%s: the answer to %s arrived damaged; asking again", self.alias, what)
            self._write(again(self._seq))
            deadline = max(deadline, time.monotonic() + ACK_SLACK)

    async def _deliver(self, request: Request) -> None:
        """Send `request` until the agent holds an intact copy and has started it."""
        damaged = 0
        misses = 0
        while True:
            self._seq += 1
            data = request.encode(self._seq, request.script_sha not in self._scripts)
            self._write(data)
            try:
                marker = await self._next(
                    self._seq, "KBM", time.monotonic() + ACK_SLACK + len(data) / SLOW_RATE
                )
            except _Timeout:
                marker = await self._probe()
            if marker.kind in "KOEZ":
                if marker.kind != "K":
                    self._markers.appendleft(marker)  # the answer is already coming
                self._scripts.add(request.script_sha)
                return
            if marker.kind == "M" and misses == 0:
                misses += 1
                self._scripts.discard(request.script_sha)
                continue
            damaged += 1
            self.damaged += 1
            if damaged >= MAX_TRIES or marker.kind == "M":
                raise app_error(
                    Kind.TRANSFER_FAILED,
                    f"{self.alias}: the console damaged the command {damaged} times in a row; "
                    "nothing was run.",
                )
            log.warning("%s: a request arrived damaged; sending it again", self.alias)

    async def _probe(self) -> Marker:
        """No acknowledgement came: ask about the request. An idle agent that never took it
        says `G`; one that ran it (its `K` damaged) answers it. Silence: the agent is still
        waiting for bytes of a block that were lost, so the request never ran."""
        self._write(again(self._seq))
        try:
            return await self._next(self._seq, "KBMGOEZ", time.monotonic() + PROBE)
        except _Timeout:
            raise ConsoleLost(self._no_answer("the console stopped answering"), False) from None

    async def _answer(self, deadline: float) -> Completed | None:
        """The answer to the current request; None when it arrived damaged."""
        stdout_raw = b""
        flowing = False
        while True:
            marker = await self._next(self._seq, "OEZG", deadline, stall=STALL if flowing else None)
            if marker.kind == "O":
                flowing = True
            elif marker.kind == "E":
                stdout_raw = marker.before
            elif marker.kind == "G":
                return None
            else:
                break
        return verified_answer(marker.fields, stdout_raw, marker.before)

    async def _next(
        self,
        seq: int,
        kinds: str,
        deadline: float,
        *,
        stall: float | None = None,
        any_byte: bool = False,
    ) -> Marker:
        """The next marker of `seq` with one of `kinds`; others are dropped (duplicates and
        leftovers of earlier requests). Raises _Timeout at the deadline, which with `stall`
        moves on while bytes keep arriving; with `any_byte`, as soon as anything arrived."""
        received = self._last_byte
        while True:
            while self._markers:
                marker = self._markers.popleft()
                if marker.seq == seq and marker.kind in kinds:
                    return marker
            if any_byte and self._last_byte != received:
                raise _Timeout
            now = time.monotonic()
            limit = max(deadline, self._last_byte + stall) if stall else deadline
            if now >= limit:
                raise _Timeout
            assert self._proc is not None and self._proc.stdout is not None
            try:
                data = await asyncio.wait_for(self._proc.stdout.read(READ_SIZE), limit - now)
            except TimeoutError:
                continue
            if not data:
                raise _Ended(await self._ended())
            self._last_byte = time.monotonic()
            self._markers.extend(self._scanner.feed(data))

    def _write(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        if self._proc.stdin.is_closing():
            return
        self._proc.stdin.write(data)
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        # A broken pipe shows up as end of output too; that is where it is reported.
        with contextlib.suppress(ConnectionError):
            await self._proc.stdin.drain()

    async def _ended(self) -> RpcError:
        """Why the console is gone, once ssh has exited."""
        self._broken = True
        assert self._proc is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), 5)
        if self._drain_stderr is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._drain_stderr), 2)
        text = self._stderr.decode(errors="replace")
        code = self._proc.returncode
        await self.close()
        if code == 255 or code is None:
            return classify(self.alias, text, 255)
        return app_error(
            Kind.HOST_UNREACHABLE,
            f"host unreachable: {self.alias}: the console session ended (exit status {code})",
            detail=text.strip()[-300:],
        )

    def _no_answer(self, what: str) -> RpcError:
        return app_error(Kind.HOST_UNREACHABLE, f"host unreachable: {self.alias}: {what}")

    async def _collect_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(4096):
            if len(self._stderr) < 64 * 1024:
                self._stderr += chunk

    async def close(self, *, idle: bool = False) -> None:
        """End ssh (and with it the far shell: its terminal hangs up). An `idle` console is
        first asked to leave, so its channel is closed from the far side before ssh goes."""
        proc = self._proc
        if proc is None:
            self._broken = True
            return
        if idle and not self._broken and proc.returncode is None:
            self._write(leave())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), LEAVE_TIMEOUT)
        self._broken = True
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        if self._writing is not None:
            self._writing.cancel()
        if self._drain_stderr is not None and not self._drain_stderr.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._drain_stderr, 1)


def verified_answer(
    fields: tuple[str, ...], stdout_raw: bytes, stderr_raw: bytes
) -> Completed | None:
    """The answer a `Z` marker (exit code, stdout's and stderr's sha256) vouches for, from
    the base64 blocks that came before it; None when what arrived is not exactly that (a
    block damaged on the way decodes to other bytes, or to nothing): it is asked again."""
    if len(fields) != 3 or not fields[0].isdigit():
        return None
    code, out_sha, err_sha = fields
    stdout = base64_payload(stdout_raw)
    stderr = base64_payload(stderr_raw)
    if stdout is None or stderr is None:
        return None
    if sha256_hex(stdout) != out_sha or sha256_hex(stderr) != err_sha:
        return None
    return Completed(int(code), stdout, stderr)
