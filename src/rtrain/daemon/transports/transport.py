"""What every transport offers: run a far-side script, and (where it can) stream bytes into
or out of one.

`exec` and `local` run each script as its own process (through ssh, or directly);
`console` drives one interactive shell. Operations never know which one they have. What a
file's move means (hashes at both ends, resumable pieces, the far side's verdict) is the
transfer engine's (daemon/transfer/), built on `run`, `stream_in` and `stream_out`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rtrain.daemon.remote import script
from rtrain.daemon.remote.contract.answers import Completed as Completed  # every transport's answer
from rtrain.daemon.transports.byte_pump import (
    FileRange,
    Pump,
    WakePipe,
    drain,
    receive,
    send_range,
    widen,
)
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import ConnectionState
from rtrain.protocol.messages import Transport as TransportKind

CHUNK = 1024 * 1024
# A transfer that moves no byte for this long is stalled (a wedged master or a dead route)
# and is given up, so a copy never hangs its request forever.
STALL_TIMEOUT = 120.0
# How much of a login's noise is kept (for preflight to show); the rest is only skipped.
NOISE_KEPT = 4096
# How long a killed transfer process gets to be reaped.
REAP_WAIT = 10.0


class Transport(ABC):
    kind: TransportKind
    alias: str

    @abstractmethod
    async def connect(self) -> None:
        """Make the host reachable now; raises the classified error when it is not."""

    @abstractmethod
    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        """Run far-side script `name` with `args`; its output, whatever its exit status."""

    async def close(self) -> None:
        return None

    @property
    def state(self) -> ConnectionState:
        return "connected"

    @property
    def last_error(self) -> str | None:
        return None

    # Whether `stream_in` and `stream_out` work: a script fed from / read into the daemon as
    # a byte stream, on a channel of its own. The console transport has one PTY and no such
    # thing; the transfer engine then moves files in checksummed chunks through `run`.
    streams = False

    async def stream_in(
        self,
        name: str,
        args: Sequence[str],
        chunks: Callable[[], Iterable[bytes]],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        """Run script `name` with the bytes `chunks()` yields as its stdin; its answer once it
        has ended. `chunks` is called again when the attempt has to be made again."""
        raise NotImplementedError

    async def stream_file_in(
        self,
        name: str,
        args: Sequence[str],
        source: FileRange,
        progress: Callable[[int], None],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        """`stream_in` of a byte range of a local file, moved by a thread of its own
        (byte_pump.py) and never through Python; `progress` hears of the bytes on the loop."""
        raise NotImplementedError

    async def stream_out(
        self,
        name: str,
        args: Sequence[str],
        sink: Callable[[bytes], None],
        *,
        stdin: bytes = b"",
    ) -> Completed:
        """Run script `name` with `stdin`, handing each piece of its stdout to `sink` as it
        comes; its answer (stderr, exit status; stdout empty) once it has ended. An exception
        from `sink` stops the script and is raised here."""
        raise NotImplementedError

    async def run_fed(
        self, name: str, args: Sequence[str], feed: asyncio.Future[bytes], *, timeout: float = 60
    ) -> Completed:
        """Run script `name` now, on a channel of its own, and write `feed`'s bytes to its
        stdin once it has them, then close it; its answer within `timeout` of that. A `feed`
        that is cancelled closes the stdin with nothing written (the script, waiting for
        its input, then ends: launch.sh --ahead launches nothing), and so does a transport
        that needs the channel for other work (the host allows few sessions). Where
        `streams` is true."""
        raise NotImplementedError

    async def stream_out_on_thread(
        self, name: str, args: Sequence[str], sink: Callable[[memoryview], None]
    ) -> Completed:
        """`stream_out` whose stdout a thread of its own reads (byte_pump.py), in blocks of
        up to 1 MiB, calling `sink` there with a view valid only during the call: `sink`
        must touch nothing the event loop uses (`loop.call_soon_threadsafe` carries news
        back). An exception from `sink` stops the script and is raised here."""
        raise NotImplementedError


class ProcessTransport(Transport):
    """A transport where each script is one child process whose argv `_argv` builds.

    A login shell may print before the script runs (`echo Welcome` in `~/.bashrc`), on
    stdout and on stderr. So each script first prints a fresh marker on both, and only what
    follows the marker is its output: `_spawn` returns the marker, and `skip_noise` (for a
    stream) or `Framed.split` (for a whole answer) drop what came before it. The script is
    the login shell's last command, so nothing of the shell's can come after.
    """

    @abstractmethod
    def _argv(self, text: str, args: Sequence[str]) -> list[str]: ...

    async def _spawn(
        self,
        name: str,
        args: Sequence[str],
        *,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
    ) -> tuple[asyncio.subprocess.Process, bytes]:
        await self.connect()
        marker = f"rtrain-{secrets.token_hex(12)}-begins"
        text = f"printf '%s\\n' {marker}; printf '%s\\n' {marker} >&2\n" + script(name)
        proc = await asyncio.create_subprocess_exec(
            *self._argv(text, args), stdin=stdin, stdout=stdout, stderr=stderr
        )
        return proc, f"{marker}\n".encode()

    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        proc, marker = await self._spawn(
            name,
            args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin or b""), timeout)
        except (TimeoutError, asyncio.CancelledError) as error:
            await _reap(proc)
            if isinstance(error, asyncio.CancelledError):
                raise
            raise self._timed_out(name, timeout) from None
        assert proc.returncode is not None
        return self._answer(proc.returncode, out, err, marker)

    def _answer(self, returncode: int, out: bytes, err: bytes, marker: bytes) -> Completed:
        """A script's whole answer, without what the login printed before it."""
        noise_out, out = split_noise(out, marker)
        noise_err, err = split_noise(err, marker)
        self._check_transport_failure(returncode, err)
        return Completed(returncode, out, err, noise_out + noise_err)

    def _check_transport_failure(self, returncode: int, stderr: bytes) -> None:
        """Hook for ssh: exit 255 means the connection failed, not the script."""

    def _timed_out(self, name: str, timeout: float) -> Exception:
        return app_error(
            Kind.TIMEOUT,
            f"{self.alias}: {name} took longer than {timeout:.0f} s "
            "(is the host or the connection stalled?)",
        )

    def _stalled(self, what: str) -> Exception:
        return app_error(
            Kind.TIMEOUT,
            f"{self.alias}: {what} stalled: nothing moved for {STALL_TIMEOUT:.0f} s "
            "(is the host or the connection stalled?)",
        )

    streams = True

    async def stream_in(
        self,
        name: str,
        args: Sequence[str],
        chunks: Callable[[], Iterable[bytes]],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        proc, marker, reading = await self._spawn_answering(name, args)
        assert proc.stdin is not None
        try:
            try:
                for chunk in chunks():
                    proc.stdin.write(chunk)
                    async with asyncio.timeout(STALL_TIMEOUT):
                        await proc.stdin.drain()
                proc.stdin.close()
            except (ConnectionError, BrokenPipeError):
                answer_within = STALL_TIMEOUT  # the far side quit early; its output says why
            async with asyncio.timeout(answer_within):
                out, err = await reading
                await proc.wait()
        except BaseException as error:
            reading.cancel()
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._stalled(f"{name} {' '.join(args[-2:])}") from None
            raise
        assert proc.returncode is not None
        return self._answer(proc.returncode, out, err, marker)

    async def _spawn_answering(
        self, name: str, args: Sequence[str]
    ) -> tuple[asyncio.subprocess.Process, bytes, asyncio.Future[tuple[bytes, bytes]]]:
        """Script `name` with a pipe on each stream, and the reading of its whole stdout and
        stderr begun (so a script that writes much while it reads never blocks)."""
        proc, marker = await self._spawn(
            name,
            args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        return proc, marker, asyncio.gather(proc.stdout.read(), proc.stderr.read())

    async def run_fed(
        self, name: str, args: Sequence[str], feed: asyncio.Future[bytes], *, timeout: float = 60
    ) -> Completed:
        proc, marker, reading = await self._spawn_answering(name, args)
        assert proc.stdin is not None
        try:
            try:
                # Shielded: the caller owns `feed`; a cancelled wait must not cancel it.
                data = await asyncio.shield(feed)
            except asyncio.CancelledError:
                if not feed.cancelled():
                    raise  # this wait itself was cancelled
                data = b""
            await _feed(proc, data)
            async with asyncio.timeout(timeout):
                out, err = await reading
                await proc.wait()
        except BaseException as error:
            reading.cancel()
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._timed_out(name, timeout) from None
            raise
        assert proc.returncode is not None
        return self._answer(proc.returncode, out, err, marker)

    async def stream_out(
        self,
        name: str,
        args: Sequence[str],
        sink: Callable[[bytes], None],
        *,
        stdin: bytes = b"",
    ) -> Completed:
        proc, marker = await self._spawn(
            name,
            args,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        feeding = asyncio.ensure_future(_feed(proc, stdin)) if stdin else None
        try:
            noise = await skip_noise(proc.stdout, marker, sink)
            while True:
                # asyncio.timeout, not wait_for: on 3.11 wait_for around a read that already
                # has data can swallow a cancellation, and the transfer would go on.
                async with asyncio.timeout(STALL_TIMEOUT):
                    chunk = await proc.stdout.read(CHUNK)
                if not chunk:
                    break
                sink(chunk)
            async with asyncio.timeout(STALL_TIMEOUT):
                err = await errors
                await proc.wait()
                if feeding is not None:
                    await feeding
        except BaseException as error:
            errors.cancel()
            if feeding is not None:
                feeding.cancel()
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._stalled(f"reading {args[-1] if args else name}") from None
            raise
        assert proc.returncode is not None
        done = self._answer(proc.returncode, b"", err, marker)
        return Completed(done.returncode, b"", done.stderr, noise + done.noise)

    async def stream_file_in(
        self,
        name: str,
        args: Sequence[str],
        source: FileRange,
        progress: Callable[[int], None],
        *,
        answer_within: float = STALL_TIMEOUT,
    ) -> Completed:
        into, write = os.pipe()
        widen(write)
        try:
            proc, marker = await self._spawn(
                name,
                args,
                stdin=into,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except BaseException:
            os.close(into)
            os.close(write)
            raise
        # `into` stays open here too: a halt drains it, so a thread blocked on a far side
        # that stopped reading goes on and ends (byte_pump.py).
        assert proc.stdout is not None and proc.stderr is not None
        reading = asyncio.ensure_future(asyncio.gather(proc.stdout.read(), proc.stderr.read()))
        pump = Pump(f"{self.alias} {name}")
        pump.start(send_range(source, write, pump.tell(progress)))
        try:
            try:
                # The far side answers once its stdin ends; an answer before that means it quit
                # early, and its output says why.
                await pump.watch(asyncio.ensure_future(_first(pump.done, reading)), STALL_TIMEOUT)
                if pump.done.done():
                    pump.done.result()
                    os.close(write)
                    write = -1
                else:
                    await pump.halt(lambda: drain(into))
            except TimeoutError:
                raise self._stalled(f"{name} {' '.join(args[-2:])}") from None
            async with asyncio.timeout(answer_within):
                out, err = await reading
                await proc.wait()
        except BaseException as error:
            reading.cancel()
            await pump.halt(lambda: drain(into))
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._stalled(f"{name} {' '.join(args[-2:])}") from None
            raise
        finally:
            os.close(into)
            if write >= 0:
                os.close(write)
        assert proc.returncode is not None
        return self._answer(proc.returncode, out, err, marker)

    async def stream_out_on_thread(
        self, name: str, args: Sequence[str], sink: Callable[[memoryview], None]
    ) -> Completed:
        out, write = os.pipe()
        widen(out)
        try:
            proc, marker = await self._spawn(
                name,
                args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write,
                stderr=asyncio.subprocess.PIPE,
            )
        except BaseException:
            os.close(out)
            raise
        finally:
            # The child has its own copy: the stream ends when the script's stdout does.
            os.close(write)
        assert proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        noise = bytearray()
        wake = WakePipe()
        pump = Pump(f"{self.alias} {name}")
        pump.start(receive(out, marker, sink, noise, NOISE_KEPT, wake))
        try:
            try:
                await pump.watch(asyncio.ensure_future(_first(pump.done, errors)), STALL_TIMEOUT)
                if pump.done.done():
                    pump.done.result()  # the sink failed, or the stream ended early
                async with asyncio.timeout(STALL_TIMEOUT):
                    err = await errors
                    await proc.wait()
                await pump.finished(STALL_TIMEOUT)
            except TimeoutError:
                raise self._stalled(f"reading {args[-1] if args else name}") from None
        except BaseException:
            errors.cancel()
            await pump.halt(wake.wake)
            await _reap(proc)
            raise
        finally:
            # The thread has ended here (the paths above wait for it), so neither fd is used.
            wake.close()
            os.close(out)
        assert proc.returncode is not None
        done = self._answer(proc.returncode, b"", err, marker)
        return Completed(done.returncode, b"", done.stderr, bytes(noise) + done.noise)


async def _first(*waited: asyncio.Future[Any]) -> None:
    """Return once any of `waited` is done."""
    await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)


async def skip_noise(
    stream: asyncio.StreamReader, marker: bytes, sink: Callable[[bytes], None]
) -> bytes:
    """Read `stream` up to the script's start marker; give `sink` what followed it in the
    same read. Returns what came before (the login's noise; at most NOISE_KEPT of it). With
    no marker at all (the script never ran), nothing reaches `sink`."""
    kept = b""
    window = b""
    while True:
        async with asyncio.timeout(STALL_TIMEOUT):
            chunk = await stream.read(CHUNK)
        if not chunk:
            return kept
        window += chunk
        at = window.find(marker)
        if at >= 0:
            kept = (kept + window[:at])[:NOISE_KEPT]
            if rest := window[at + len(marker) :]:
                sink(rest)
            return kept
        # Keep only what could still hold the start of a marker split across reads.
        cut = max(0, len(window) - len(marker))
        kept = (kept + window[:cut])[:NOISE_KEPT]
        window = window[cut:]


def split_noise(data: bytes, marker: bytes) -> tuple[bytes, bytes]:
    """(what came before the marker, what came after it); all output when there is none."""
    at = data.find(marker)
    if at < 0:
        return b"", data
    return data[:at], data[at + len(marker) :]


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write `data` to the script's stdin and close it; a script that quit early says why in
    its answer, not here."""
    assert proc.stdin is not None
    with contextlib.suppress(ConnectionError, BrokenPipeError):
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Kill `proc` and wait for it. Its pipes are drained meanwhile: asyncio's wait() also
    waits for them to close, and a pipe whose reading was paused (a full buffer nobody
    reads any more) never would, so without this the wait could hang forever."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()

    async def drain(stream: asyncio.StreamReader | None) -> None:
        with contextlib.suppress(Exception):
            while stream is not None and await stream.read(CHUNK):
                pass

    await asyncio.sleep(0)  # readers just cancelled let go of their streams first
    with contextlib.suppress(Exception):
        async with asyncio.timeout(REAP_WAIT):
            await asyncio.gather(drain(proc.stdout), drain(proc.stderr), proc.wait())
