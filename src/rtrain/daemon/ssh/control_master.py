"""One OpenSSH ControlMaster per host alias, started and supervised by the daemon.

Every remote command of a host goes through its master, so each costs one round trip on an
open connection instead of a fresh handshake. A master that died (network drop, sshd restart,
laptop sleep) is noticed on the next use and started again.

A host that asks for a password or a second factor gets its connection from `rtrain login`
instead: a master the user's own terminal opened on the host's login path (login.py). While
one answers there, every command goes through it; the daemon never starts one of its own in
BatchMode beside it, and never ends it (it outlives the daemon, until `rtrain logout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Literal

from rtrain.daemon.private_dir import ensure_private_dir
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import ConnectionState

from .cipher_order import master_cipher_options
from .failures import classify
from .options import CONNECT_TIMEOUT, base_args

log = logging.getLogger(__name__)
LOGIN_PURPOSE = "login"

# sun_path holds 108 bytes; ssh adds ".XXXXXXXXXXXXXXXX" while creating the socket.
MAX_CONTROL_PATH = 90
# A live master greets every client on its socket at once (MUX_MSG_HELLO, protocol 4), from
# its own event loop, without asking the host. Silence this long means it is wedged.
MUX_HELLO = b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x04"
HELLO_TIMEOUT = 5.0
# What a control socket path holds: a master that greets, something that listens but does not
# (wedged, or no master at all), or nothing that listens.
Greeting = Literal["live", "silent", "absent"]


def control_path(runtime_dir: Path, alias: str, config: Path | None, purpose: str = "") -> Path:
    """A short socket path, the same length for any alias, in a private directory; a
    `purpose` (the login's) gives the host a second path of its own."""
    key = f"{purpose}\0{alias}\0{config}" if purpose else f"{alias}\0{config}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    directory = runtime_dir / "cm"
    if len(str(directory)) + 1 + len(digest) > MAX_CONTROL_PATH:
        directory = Path(f"/tmp/rtrain-cm-{os.getuid()}")
    # Checked, not assumed: the /tmp fallback could have been made by another user first.
    return ensure_private_dir(directory) / digest


async def greets(path: Path) -> Greeting:
    """Whether a master greets a client on `path`."""
    # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancellation that comes as
    # its inner await completes, and this runs before every command (a cancelled fetch
    # then went on to the end).
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            reader, writer = await asyncio.open_unix_connection(str(path))
    except (OSError, TimeoutError):
        return "absent"
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            greeting = await reader.readexactly(len(MUX_HELLO))
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        greeting = b""
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return "live" if greeting == MUX_HELLO else "silent"


class ControlMaster:
    def __init__(self, alias: str, runtime_dir: Path, config: Path | None) -> None:
        self.alias = alias
        self.config = config
        self.own_path = control_path(runtime_dir, alias, config)
        self.login_path = control_path(runtime_dir, alias, config, LOGIN_PURPOSE)
        # When the login in use was opened (its socket's mtime); None while the daemon's own
        # master (or none) serves the host.
        self.login_since: float | None = None
        self.state: ConnectionState = "disconnected"
        self.last_error: str | None = None
        self.started_at: float | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._lock = asyncio.Lock()

    @property
    def path(self) -> Path:
        """The control socket commands go through now: the login's while one serves."""
        return self.login_path if self.login_since is not None else self.own_path

    @property
    def alive(self) -> bool:
        return (
            self._proc is not None and self._proc.returncode is None and self.own_path.is_socket()
        )

    async def ensure(self) -> None:
        """Make sure a working master exists; raise the classified ssh error if not."""
        if await self.use_login():
            return
        proc = self._proc
        if self.alive and await self._answers(proc):
            return
        async with self._lock:
            # Another caller replaced it meanwhile; or had begun to, and `proc` is that new
            # master, seen before its socket appeared: it must not be replaced in turn.
            if self.alive and (self._proc is not proc or await self._answers(self._proc)):
                return
            await self._start()

    async def use_login(self) -> bool:
        """True when a login answers on the host's login path: commands go through it from
        now on. A login that stopped answering (it expired, or was ended) is let go here."""
        greeted = await greets(self.login_path)
        if greeted == "live":
            since = _mtime(self.login_path)
            if since is not None and since != self.login_since:
                log.info("using the login connection of %s", self.alias)
                self.login_since = since
                self.started_at = time.time()  # a new generation: shells of the old go
                self.state = "connected"
                self.last_error = None
            return since is not None
        if self.login_since is not None:
            log.info("the login connection of %s ended", self.alias)
            self.login_since = None
            self.state = "disconnected"
            self.last_error = "the login connection ended"
        if greeted == "absent" and self.login_path.is_socket():
            # Its master is gone (it was killed): a new login needs the name. One that is
            # only slow to greet keeps it; the user's login is not the daemon's to end.
            with contextlib.suppress(FileNotFoundError):
                self.login_path.unlink()
        return False

    async def answers(self) -> bool:
        """True when the master runs and greets clients: the connection is there."""
        if self.login_since is not None:
            return await greets(self.login_path) == "live"
        return self.alive and await self._answers(self._proc)

    async def _answers(self, proc: asyncio.subprocess.Process | None) -> bool:
        """True when the master greets a client on its socket.

        A process that still runs is not enough: one that was just killed leaves its socket
        behind until it is reaped (and ssh would then quietly bypass it with a fresh
        connection), and a wedged one would hold every command until its timeout.
        """
        greeted = await greets(self.own_path)
        if greeted == "absent":
            return False
        if greeted == "silent":
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
        if not ours and self.own_path.is_socket():
            await self._retire_stale()
        with contextlib.suppress(FileNotFoundError):
            self.own_path.unlink()
        self.state = "connecting"
        self._stderr.clear()
        argv = [
            "ssh",
            *base_args(self.config),
            "-o",
            f"ControlPath={self.own_path}",
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            *await master_cipher_options(self.alias, self.config),
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
            if self.own_path.is_socket():
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
        await ask_master_to_exit(self.config, self.own_path, self.alias)

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
        if self.state == "connected" and self.login_since is None:
            self.state = "disconnected"
            self.last_error = last_words(self._stderr.decode(errors="replace"))
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
        """End the daemon's own master; a login is the user's and lives on."""
        await self._kill()
        self.state = "disconnected"
        self.login_since = None
        with contextlib.suppress(FileNotFoundError):
            self.own_path.unlink()


def _mtime(path: Path) -> float | None:
    """When the socket was made: a master binds it once, when its login succeeded."""
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def last_words(stderr: str) -> str | None:
    """What a master said as it exited, on one line: through a ProxyJump, the bastion's ssh
    and the master often print the same line twice."""
    lines = list(dict.fromkeys(line.strip() for line in stderr.splitlines() if line.strip()))
    return "; ".join(lines)[-300:] or None


async def ask_master_to_exit(config: Path | None, socket: str | Path, alias: str) -> None:
    """`ssh -O exit` to the master listening on `socket`, waiting at most HELLO_TIMEOUT."""
    proc = await asyncio.create_subprocess_exec(
        "ssh",
        *base_args(config),
        "-o",
        f"ControlPath={socket}",
        "-O",
        "exit",
        alias,
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
