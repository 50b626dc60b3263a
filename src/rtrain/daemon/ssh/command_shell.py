"""Long-lived far-side shells on the master, each fed one script at a time.

A new command on a ControlMaster costs two round trips before it runs: the master opens a
channel, then asks it to run the command. A `sh` that already listens on an open channel
runs the next script after one: the script goes out on its stdin and its output comes
back. Status, tail and stop are one such script each, so this halves what they wait for
on a long link.

Each script still runs as `sh -c SCRIPT rtrain ARGS...` in a child of that shell, exactly
as on its own channel: what it does to its environment, its options or its exit status
stays in the child. Its stdin is /dev/null (the shell's stdin is the command stream), or,
for a script given lines of text (a start's list of inputs), a here-document closed by a
line holding the fresh nonce (`here_document_fits`); scripts fed bytes never come here.
Around the script the shell prints markers with a fresh random nonce, on stdout (the end
one with the exit status) and on stderr: that is how the daemon knows where the script's
output begins and ends without escaping anything, and why stray bytes from before (a
chatty rc file, a straggler) never count as output.

A shell keeps the login environment it started with (PATH, tokens, what `.bashrc` set), so
it retires after MAX_AGE, and scripts whose answer depends on that environment (preflight,
launch) take a fresh channel anyway; see ExecTransport.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
from collections.abc import Callable, Sequence

from rtrain.daemon.transports.transport import Completed

# The most output one script may print: a tail chunk is 1 MiB, a fetch listing of a large
# tree some more. A script that prints more loses its shell and fails instead.
OUTPUT_LIMIT = 64 * 1024 * 1024
# Shells per host. sshd allows ten sessions per connection (MaxSessions) and transfers need
# theirs; two keep a poll and a tail (or a status) from waiting for each other.
POOL_SIZE = 2
HANDSHAKE_TIMEOUT = 30.0
# After a shell failed to open, scripts take their own channels for this long before the
# next attempt, so a host that is down does not get a doomed ssh client per script.
RETRY_AFTER = 5.0
# A shell older than this is closed rather than used: the login environment it carries is
# then at most this stale.
MAX_AGE = 600.0
# How long a shell whose answer broke off gets to exit and say why before it is killed.
EXIT_WAIT = 1.0


def here_document_fits(data: bytes) -> bool:
    """True when `data` can be a script's stdin through a shell: lines of text, each ending
    in a line break (a here-document ends with one), with no NUL (sh drops it)."""
    return data.endswith(b"\n") and b"\0" not in data and len(data) <= OUTPUT_LIMIT


class ShellLost(Exception):
    """The script's answer broke off, and its shell is closed.

    `returncode` is the ssh client's: 255 when the connection or the master failed (or the
    far shell was killed by a signal), -9 when the shell had to be killed. `overflowed`: the
    script printed more than OUTPUT_LIMIT, so the shell was given up while it still ran.
    """

    def __init__(self, returncode: int | None, stderr: bytes, overflowed: bool = False) -> None:
        super().__init__("the far-side shell ended")
        self.returncode = returncode
        self.stderr = stderr
        self.overflowed = overflowed


class CommandShell:
    """One far-side `sh` reading scripts from its stdin, through an ssh client process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.broken = False
        self.opened_at = asyncio.get_running_loop().time()
        # Which connection it was opened on (the pool's `generation`): a shell that ends
        # with a replaced master went down with the old connection, not on its own.
        self.generation: object = None

    @classmethod
    async def open(cls, argv: Sequence[str]) -> CommandShell:
        """Start `argv` (an ssh client running `exec sh`) and wait until the shell answers.

        Whatever the login shell printed first (a chatty rc file) comes before the first
        start markers, so it is dropped here.
        """
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=OUTPUT_LIMIT,
        )
        shell = cls(proc)
        try:
            await asyncio.wait_for(shell._exchange("", ()), HANDSHAKE_TIMEOUT)
        except BaseException:
            await shell.close()
            raise
        return shell

    @property
    def usable(self) -> bool:
        return not self.broken and self._proc.returncode is None

    @property
    def expired(self) -> bool:
        return asyncio.get_running_loop().time() - self.opened_at > MAX_AGE

    async def run(
        self, text: str, args: Sequence[str], timeout: float, stdin: bytes = b""
    ) -> Completed:
        """Run script `text` with `args` (and `stdin`, which here_document_fits); raises
        ShellLost, TimeoutError or CancelledError, after each of which this shell is closed
        (a script may still be running in it)."""
        try:
            return await asyncio.wait_for(self._exchange(text, args, stdin), timeout)
        except BaseException:
            await self.close()
            raise

    async def _exchange(self, text: str, args: Sequence[str], data: bytes = b"") -> Completed:
        stdin, stdout, stderr = self._proc.stdin, self._proc.stdout, self._proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None
        nonce = f"rtrain-{secrets.token_hex(16)}"
        if data and (not here_document_fits(data) or f"\n{nonce}-in\n".encode() in b"\n" + data):
            raise ValueError("stdin that no here-document can carry")
        feed = f" <<'{nonce}-in'; " if data else " </dev/null; "
        # An empty text is the handshake: only the markers.
        command = shlex.join(["sh", "-c", text, "rtrain", *args]) + feed if text else ""
        stdin.write(
            f'printf "%s\\n" {nonce}-start; printf "%s\\n" {nonce}-start >&2; '
            f'{command}rtrain_rc=$?; printf "\\n%s %s\\n" {nonce}-end "$rtrain_rc"; '
            f'printf "\\n%s\\n" {nonce}-end >&2\n'.encode()
        )
        if data:
            stdin.write(data + f"{nonce}-in\n".encode())
        end = f"\n{nonce}-end"
        try:
            await stdin.drain()
            await stdout.readuntil(f"{nonce}-start\n".encode())
            out = await stdout.readuntil(f"{end} ".encode())
            code = await stdout.readuntil(b"\n")
            await stderr.readuntil(f"{nonce}-start\n".encode())
            err = await stderr.readuntil(f"{end}\n".encode())
        except asyncio.LimitOverrunError:
            raise await self._lost(overflowed=True) from None
        except (OSError, asyncio.IncompleteReadError):
            raise await self._lost() from None
        return Completed(int(code), out[: -len(end) - 1], err[: -len(end) - 1])

    async def _lost(self, overflowed: bool = False) -> ShellLost:
        """Why the answer broke off: the ssh client's exit status and its last words."""
        self.broken = True
        proc = self._proc
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()
        last_words = b""
        with contextlib.suppress(Exception):
            last_words = await asyncio.wait_for(proc.stderr.read(), EXIT_WAIT)
            await asyncio.wait_for(proc.wait(), EXIT_WAIT)
        await self.close()
        return ShellLost(proc.returncode, last_words, overflowed)

    async def close(self) -> None:
        self.broken = True
        proc = self._proc
        if proc.stdin is not None:
            proc.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await proc.wait()


class ShellPool:
    """Idle shells of one host, and one opening in the background when there are too few."""

    def __init__(
        self,
        argv: Callable[[], Sequence[str]],
        generation: Callable[[], object] = lambda: None,
        size: int = POOL_SIZE,
    ) -> None:
        self._argv = argv
        self._generation = generation
        self._size = size
        self._idle: list[CommandShell] = []
        self._busy = 0
        self._opening: asyncio.Task[None] | None = None
        self._retry_at = 0.0
        self._closed = False
        self._closing: set[asyncio.Future[None]] = set()  # shells being retired
        self._all_back = asyncio.Event()  # set when no shell is busy

    def take(self) -> CommandShell | None:
        """An idle shell that is live, young and on the current master (now busy), or None,
        and then one opens in the background for the next script."""
        while self._idle:
            shell = self._idle.pop()
            if shell.usable and not shell.expired and shell.generation == self._generation():
                self._busy += 1
                return shell
            self._retire(shell)
        self._grow()
        return None

    def give_back(self, shell: CommandShell) -> None:
        self._busy -= 1
        if self._busy == 0:
            self._all_back.set()
        if shell.usable and not self._closed and len(self._idle) + self._busy < self._size:
            self._idle.append(shell)
        else:
            self._retire(shell)
        self._grow()

    async def give_up(self, wait_for_busy: float = 0.0) -> None:
        """No shells any more: the host needs every session it allows for other work.
        When this returns the idle shells are closed and their sessions free, and so are the
        busy ones, if they came back within `wait_for_busy` seconds."""
        self._size = 0
        if self._opening is not None:
            self._opening.cancel()
            with contextlib.suppress(BaseException):
                await self._opening
        idle, self._idle = self._idle, []
        for shell in idle:
            await shell.close()
        if self._busy and wait_for_busy > 0:
            self._all_back.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_back.wait(), wait_for_busy)
        for task in list(self._closing):
            with contextlib.suppress(BaseException):
                await task

    def _retire(self, shell: CommandShell) -> None:
        self._closing = {task for task in self._closing if not task.done()}
        self._closing.add(asyncio.ensure_future(shell.close()))

    def _grow(self) -> None:
        loop = asyncio.get_running_loop()
        if (
            self._closed
            or self._opening is not None
            or len(self._idle) + self._busy >= self._size
            or loop.time() < self._retry_at
        ):
            return
        self._opening = loop.create_task(self._open())

    async def _open(self) -> None:
        generation = self._generation()
        try:
            shell = await CommandShell.open(self._argv())
            shell.generation = generation
        except Exception:
            # The host or its master is gone; scripts take their own channels meanwhile
            # and report the failure themselves.
            self._retry_at = asyncio.get_running_loop().time() + RETRY_AFTER
            return
        finally:
            self._opening = None
        if self._closed:
            await shell.close()
        else:
            self._idle.append(shell)

    async def close(self) -> None:
        self._closed = True
        await self.give_up()
