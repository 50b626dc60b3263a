"""The `exec` transport: each script is `sh -c SCRIPT rtrain ARGS...` on the far side, run by
a long-lived shell on the master when one is free (one round trip), else on a channel of its
own (`ssh host sh -c ...` through the master: two round trips)."""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from rtrain.daemon.remote import script
from rtrain.daemon.transports.byte_pump import FileRange
from rtrain.daemon.transports.transport import STALL_TIMEOUT, Completed, ProcessTransport
from rtrain.protocol.errors import APPLICATION_ERROR, Kind, RpcError, app_error
from rtrain.protocol.messages import ConnectionState

from .command_shell import OUTPUT_LIMIT, ShellLost, ShellPool, here_document_fits
from .control_master import ControlMaster
from .failures import classify

log = logging.getLogger(__name__)
T = TypeVar("T")

# What a command's ssh says when its master went away under it, and when it then refuses to
# connect on its own (ProxyCommand=false, see ControlMaster.command_argv).
MASTER_GONE = "read from master failed"
NO_FALLBACK = "Connection closed by UNKNOWN port 65535"
# What it says when the host allows no more sessions on the connection (sshd's MaxSessions).
SESSION_REFUSED = "Session open refused by peer"
# Tries of a command whose session was refused: the first frees the shells' sessions.
SESSION_TRIES = 3
# How long a refused command waits for busy shells to come back and free their sessions.
SESSION_WAIT = 30.0
# Scripts whose answer depends on the login environment (PATH, CUDA, tokens): they get a
# fresh login on a channel of their own, never a shell's older one. The trainer inherits
# launch's environment.
FRESH_LOGIN = frozenset({"preflight", "launch"})
# Scripts whose stdin is lines of names (never a secret), or a few small inputs in base64
# (bytes that land on the host's disk anyway), may take it through a shell, as a
# here-document. Any other stdin takes a channel of its own: a far bash may keep a
# here-document in a temporary file, and a secret must never touch the host's disk.
LINES_ON_STDIN = frozenset({"cache_place", "input_tree", "prepare", "put_small"})
# Scripts that are safe to run twice: when a shell is lost under one, it runs again on a
# channel of its own instead of failing.
REPEATABLE = frozenset({"status", "read_log", "list_files", "hash_file", "stop"})


class SessionRefused(RpcError):
    """The host refused one more session on the connection; nothing ran."""


class ExecTransport(ProcessTransport):
    kind = "exec"

    def __init__(self, alias: str, runtime_dir: Path, config: Path | None) -> None:
        self.alias = alias
        self.master = ControlMaster(alias, runtime_dir, config)
        self.shells = ShellPool(
            lambda: self.master.command_argv("exec sh"), lambda: self.master.started_at
        )
        # Channels of its own open now, and an event set each time one ends.
        self._open_channels = 0
        self._channel_ended = asyncio.Event()
        # The feeds of scripts that hold a channel while they wait for their input (run_fed):
        # they give it up when the host refuses a session to other work.
        self._waiting: set[asyncio.Future[bytes]] = set()

    async def connect(self) -> None:
        await self.master.ensure()

    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        def on_channel() -> Awaitable[Completed]:
            return ProcessTransport.run(self, name, args, stdin=stdin, timeout=timeout)

        # A shell's stdin carries its scripts: lines of names can follow as a here-document,
        # any other stdin takes a channel of its own.
        by_heredoc = name in LINES_ON_STDIN and here_document_fits(stdin or b"")
        if (stdin and not by_heredoc) or name in FRESH_LOGIN:
            return await self._on_channel(on_channel)
        await self.connect()
        shell = self.shells.take()
        if shell is None:
            return await self._on_channel(on_channel)
        try:
            return await shell.run(script(name), args, timeout, stdin or b"")
        except TimeoutError:
            raise self._timed_out(name, timeout) from None
        except ShellLost as lost:
            failure = await self._shell_failure(name, lost, shell.generation)
            if failure.kind != Kind.HOST_UNREACHABLE and name in REPEATABLE:
                log.info("%s: %s; running %s on a channel of its own", self.alias, failure, name)
                return await self._on_channel(on_channel)
            raise failure from None
        finally:
            self.shells.give_back(shell)

    async def stream_in(
        self,
        name: str,
        args: Sequence[str],
        chunks: Callable[[], Iterable[bytes]],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        # A refused session ran nothing; the retry takes the chunks afresh.
        return await self._on_channel(
            lambda: ProcessTransport.stream_in(
                self, name, args, chunks, answer_within=answer_within
            )
        )

    async def stream_out(
        self,
        name: str,
        args: Sequence[str],
        sink: Callable[[bytes], None],
        *,
        stdin: bytes = b"",
    ) -> Completed:
        return await self._on_channel(
            lambda: ProcessTransport.stream_out(self, name, args, sink, stdin=stdin)
        )

    async def run_fed(
        self, name: str, args: Sequence[str], feed: asyncio.Future[bytes], *, timeout: float = 60
    ) -> Completed:
        self._waiting.add(feed)
        try:
            return await self._on_channel(
                lambda: ProcessTransport.run_fed(self, name, args, feed, timeout=timeout)
            )
        finally:
            self._waiting.discard(feed)

    async def stream_file_in(
        self,
        name: str,
        args: Sequence[str],
        source: FileRange,
        progress: Callable[[int], None],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        return await self._on_channel(
            lambda: ProcessTransport.stream_file_in(
                self, name, args, source, progress, answer_within=answer_within
            )
        )

    async def stream_out_on_thread(
        self, name: str, args: Sequence[str], sink: Callable[[memoryview], None]
    ) -> Completed:
        return await self._on_channel(
            lambda: ProcessTransport.stream_out_on_thread(self, name, args, sink)
        )

    async def _on_channel(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt` on a channel of its own. A host that allows few sessions per connection
        (MaxSessions) refuses it while the shells hold theirs: then the host gets no shells
        from now on, and the attempt is made again (nothing ran the first time). Refused
        while other channels of this transport are open, it waits for one of them to end
        (at most SESSION_WAIT) and tries again: two transfers side by side share the few."""
        tries = 0
        while True:
            self._open_channels += 1
            try:
                return await attempt()
            except SessionRefused as error:
                refused = error
                tries += 1
                if tries == 1:
                    log.info("%s refuses another session; it gets no long-lived shells", self.alias)
                    await self.shells.give_up(wait_for_busy=SESSION_WAIT)
                    continue
                others = self._open_channels - 1
                if others == 0 and tries >= SESSION_TRIES:
                    raise
            finally:
                self._open_channels -= 1
                self._channel_ended.set()
            # A script waiting for its input gives its session to work that moves now.
            for feed in self._waiting:
                feed.cancel()
            if others == 0:
                await asyncio.sleep(0.1 * (tries - 1))
                continue
            try:
                await asyncio.wait_for(self._one_channel_ended(others), SESSION_WAIT)
            except TimeoutError:
                raise refused from None

    async def _one_channel_ended(self, open_before: int) -> None:
        while self._open_channels >= open_before:
            self._channel_ended.clear()
            await self._channel_ended.wait()

    def _argv(self, text: str, args: Sequence[str]) -> list[str]:
        # Every word is quoted for the remote login shell; the script itself reads its
        # arguments as "$1"... so no value is ever parsed as shell syntax.
        return self.master.command_argv(shlex.join(["sh", "-c", text, "rtrain", *args]))

    async def _shell_failure(self, name: str, lost: ShellLost, generation: object) -> RpcError:
        if lost.overflowed:
            return app_error(
                Kind.REMOTE_FAILED,
                f"{self.alias}: {name} printed more than {OUTPUT_LIMIT // 2**20} MiB; "
                "rtrain reads no more than that from one script.",
            )
        # ssh exits 255 both when the connection failed and when the far shell was killed
        # by a signal; only the master can tell which: still the same one, and answering.
        if lost.returncode == 255 and (
            generation != self.master.started_at or not await self.master.answers()
        ):
            try:
                self._check_transport_failure(255, lost.stderr)
            except RpcError as error:
                return error
        return app_error(
            Kind.REMOTE_FAILED,
            f"{self.alias}: the far-side shell running {name} ended before its answer "
            f"was whole (exit status {lost.returncode}); try again.",
            detail=lost.stderr.decode(errors="replace").strip()[-300:] or None,
        )

    def _check_transport_failure(self, returncode: int, stderr: bytes) -> None:
        if returncode != 255:
            return
        text = stderr.decode(errors="replace")
        if SESSION_REFUSED in text:
            raise SessionRefused(
                APPLICATION_ERROR,
                f"{self.alias} refused another ssh session: its sshd allows fewer sessions per "
                "connection (MaxSessions) than are in use now; try again once other commands "
                "or transfers on it have finished.",
                {"kind": Kind.REMOTE_FAILED},
            )
        if not text.strip() or MASTER_GONE in text or NO_FALLBACK in text:
            # The master died under the command (the link was cut or timed out); its own
            # last words say why better than the command's empty stderr.
            why = self.master.last_error or "the ssh connection dropped"
            raise app_error(
                Kind.HOST_UNREACHABLE,
                f"host unreachable: {self.alias}: the connection dropped ({why.strip()})",
                detail=text.strip()[-300:] or None,
            )
        raise classify(self.alias, text, returncode, self.master.config)

    async def close(self) -> None:
        await self.shells.close()
        await self.master.close()

    @property
    def state(self) -> ConnectionState:
        return self.master.state

    @property
    def last_error(self) -> str | None:
        return self.master.last_error
