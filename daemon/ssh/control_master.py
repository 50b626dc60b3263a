"""One OpenSSH ControlMaster per host alias, started and supervised by the daemon.

Every remote command of a host goes through its master, so each costs one round trip on an
open connection instead of a fresh handshake. A master that died (network drop, sshd restart,
laptop sleep) is noticed on the next use and started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path

from rtrain.daemon.private_dir import ensure_private_dir
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import ConnectionState

from .failures import classify
from .options import CONNECT_TIMEOUT, base_args

log = logging.getLogger(__name__)

# sun_path holds 108 bytes; ssh adds ".XXXXXXXXXXXXXXXX" while creating the socket.
MAX_CONTROL_PATH = 90
# A live master greets every client on its socket at once (MUX_MSG_HELLO, protocol 4), from
# its own event loop, without asking the host. Silence this long means it is wedged.
MUX_HELLO = b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x04"
HELLO_TIMEOUT = 5.0


def control_path(runtime_dir: Path, alias: str, config: Path | None) -> Path:
    """A short socket path, the same length for any alias, in a private directory."""
    digest = hashlib.sha256(f"{alias}\0{config}".encode()).hexdigest()[:16]
    directory = runtime_dir / "cm"
    if len(str(directory)) + 1 + len(digest) > MAX_CONTROL_PATH:
        directory = Path(f"/tmp/rtrain-cm-{os.getuid()}")
    # Checked, not assumed: the /tmp fallback could have been made by another user first.
    return ensure_private_dir(directory) / digest


class ControlMaster:
    def __init__(self, alias: str, runtime_dir: Path, config: Path | None) -> None:
        self.alias = alias
        self.config = config
        self.path = control_path(runtime_dir, alias, config)
        self.state: ConnectionState = "disconnected"
        self.last_error: str | None = None
        self.started_at: float | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._lock = asyncio.Lock()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None and self.path.is_socket()

    async def ensure(self) -> None:
        """Make sure a working master exists; raise the classified ssh error if not."""
        proc = self._proc
        if self.alive and await self._answers(proc):
            return
        async with self._lock:
            # Another caller replaced it meanwhile; or had begun to, and `proc` is that new
            # master, seen before its socket appeared: it must not be replaced in turn.
            if self.alive and (self._proc is not proc or await self._answers(self._proc)):
                return
            await self._start()

    async def answers(self) -> bool:
        """True when the master runs and greets clients: the connection is there."""
        return self.alive and await self._answers(self._proc)

    async def _answers(self, proc: asyncio.subprocess.Process | None) -> bool:
        """True when the master greets a client on its socket.

        A process that still runs is not enough: one that was just killed leaves its socket
        behind until it is reaped (and ssh would then quietly bypass it with a fresh
        connection), and a wedged one would hold every command until its timeout.
        """
        # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancellation that comes as
        # its inner await completes, and this runs before every command (a cancelled fetch
        # then went on to the end).
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                reader, writer = await asyncio.open_unix_connection(str(self.path))
        except (OSError, TimeoutError):
            return False
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                greeting = await reader.readexactly(len(MUX_HELLO))
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            greeting = b""
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        if greeting != MUX_HELLO:
            log.warning("ControlMaster for %s does not answer; replacing it", self.alias)
            # Wedged: it would not act on SIGTERM either. Its commands in flight end now
            # (exit 255, a connection failure) instead of at their timeouts.
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            return False
        return True

    def command_argv(self, remote_command: str, tty: bool = False) -> list[str]:
        """argv of an ssh client that runs `remote_command` through this master."""
        return [
            "ssh",
            *base_args(self.config),
            "-o",
            f"ControlPath={self.path}",
            "-o",
            "ControlMaster=no",
            # When the master dies under it, ssh would quietly connect on its own: a command
            # outside the supervised connection, and on a dead route another ConnectTimeout
            # before the failure shows. A command fails with its master instead.
            "-o",
            "ProxyCommand=false",
            "-tt" if tty else "-T",
            self.alias,
            remote_command,
        ]

    async def _start(self) -> None:
        ours = self._proc is not None
        await self._kill()
        if not ours and self.path.is_socket():
            await self._retire_stale()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.state = "connecting"
        self._stderr.clear()
        argv = [
            "ssh",
            *base_args(self.config),
            "-o",
            f"ControlPath={self.path}",
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            "-N",
            self.alias,
        ]
        log.info("starting ControlMaster for %s", self.alias)
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        drain = asyncio.create_task(self._drain_stderr(self._proc))
        deadline = time.monotonic() + CONNECT_TIMEOUT + 5
        while True:
            if self._proc.returncode is not None:
                await asyncio.wait_for(drain, 2)
                error = classify(
                    self.alias,
                    self._stderr.decode(errors="replace"),
                    self._proc.returncode,
                    self.config,
                )
                self._fail(error)
                raise error
            if self.path.is_socket():
                self.state = "connected"
                self.last_error = None
                self.started_at = time.time()
                return
            if time.monotonic() > deadline:
                await self._kill()
                error = app_error(
                    Kind.HOST_UNREACHABLE,
                    f"host unreachable: {self.alias}: no answer within {CONNECT_TIMEOUT + 5} s",
                )
                self._fail(error)
                raise error
            await asyncio.sleep(0.01)

    async def _retire_stale(self) -> None:
        """Ask a master left by an earlier daemon (one killed with -9) to exit, so it does not
        hold a session on the host forever once its socket is replaced."""
        proc = await asyncio.create_subprocess_exec(
            "ssh",
            *base_args(self.config),
            "-o",
            f"ControlPath={self.path}",
            "-O",
            "exit",
            self.alias,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await asyncio.wait_for(proc.wait(), HELLO_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    def _fail(self, error: RpcError) -> None:
        self.state = "failed"
        self.last_error = error.message

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(4096):
            # Each console session opened through the master logs this; it is no error.
            chunk = b"".join(
                line
                for line in chunk.splitlines(keepends=True)
                if b"tcgetattr: Inappropriate ioctl" not in line
            )
            if len(self._stderr) < 64 * 1024:
                self._stderr += chunk
        await proc.wait()
        if self.state == "connected":
            self.state = "disconnected"
            self.last_error = self._stderr.decode(errors="replace").strip()[-300:] or None
            log.info("ControlMaster for %s exited: %s", self.alias, self.last_error)

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except TimeoutError:
                # A stopped (wedged) master never handles SIGTERM.
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()

    async def close(self) -> None:
        await self._kill()
        self.state = "disconnected"
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
