"""What every transport offers the operations: run a far-side script, move a file.

`exec` and `local` run each script as its own process (through ssh, or directly);
`console` drives one interactive shell. Operations never know which one they have.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from rtrain.daemon.remote import script
from rtrain.protocol.errors import Kind, RpcError, app_error

Progress = Callable[[int], None]
CHUNK = 1024 * 1024
# A transfer that moves no byte for this long is stalled (a wedged master or a dead route)
# and is given up, so a copy never hangs its request forever.
STALL_TIMEOUT = 120.0
# After the last byte the far side hashes what it received; allow it this many bytes/s.
HASH_RATE = 20e6


def machine_lines(data: bytes) -> dict[str, list[str]]:
    """The tab-separated `key<TAB>value...` lines a far-side script printed; last wins."""
    result: dict[str, list[str]] = {}
    for line in data.decode(errors="replace").splitlines():
        key, *values = line.split("\t")
        result[key] = values
    return result


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes

    def fields(self) -> dict[str, list[str]]:
        """The tab-separated `key<TAB>value...` lines of a script's output; last wins."""
        return machine_lines(self.stdout)

    def rows(self, key: str) -> list[list[str]]:
        return [
            line.split("\t")[1:]
            for line in self.stdout.decode(errors="replace").splitlines()
            if line.split("\t", 1)[0] == key
        ]

    @property
    def error_text(self) -> str:
        text = self.stderr.decode(errors="replace").strip()
        return text.splitlines()[-1] if text else f"exit status {self.returncode}"


class Transport(ABC):
    kind: str
    alias: str

    @abstractmethod
    async def connect(self) -> None:
        """Make the host reachable now; raises the classified error when it is not."""

    @abstractmethod
    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        """Run far-side script `name` with `args`; its output, whatever its exit status."""

    @abstractmethod
    async def upload(
        self, local: Path, remote_path: str, sha256: str, progress: Progress | None = None
    ) -> None:
        """Copy `local` to `remote_path`, landing only if the far side's sha256 matches."""

    @abstractmethod
    async def download(
        self, run_dir: str, rel: str, dest: Path, progress: Progress | None = None
    ) -> str:
        """Write far file `run_dir/rel` into `dest`; returns the sha256 of what arrived, once
        the far side vouched for the same bytes (it hashed what it read, and the file held
        still meanwhile). Raises TRANSFER_FAILED (`fetch_unverified`) when it did not."""

    async def close(self) -> None:
        return None

    @property
    def state(self) -> str:
        return "connected"

    @property
    def last_error(self) -> str | None:
        return None


class ProcessTransport(Transport):
    """A transport where each script is one child process whose argv `_argv` builds."""

    @abstractmethod
    def _argv(self, text: str, args: Sequence[str]) -> list[str]: ...

    async def _spawn(
        self, name: str, args: Sequence[str], **pipes: int
    ) -> asyncio.subprocess.Process:
        await self.connect()
        return await asyncio.create_subprocess_exec(*self._argv(script(name), args), **pipes)

    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed:
        proc = await self._spawn(
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
        self._check_transport_failure(proc.returncode, err)
        return Completed(proc.returncode, out, err)

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

    async def upload(
        self, local: Path, remote_path: str, sha256: str, progress: Progress | None = None
    ) -> None:
        proc = await self._spawn(
            "receive",
            [remote_path, sha256],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        reading = asyncio.gather(proc.stdout.read(), proc.stderr.read())
        try:
            try:
                with open(local, "rb") as source:
                    while chunk := source.read(CHUNK):
                        proc.stdin.write(chunk)
                        await asyncio.wait_for(proc.stdin.drain(), STALL_TIMEOUT)
                        if progress:
                            progress(len(chunk))
                proc.stdin.close()
                answer_within = STALL_TIMEOUT + local.stat().st_size / HASH_RATE
            except (ConnectionError, BrokenPipeError):
                answer_within = STALL_TIMEOUT  # the far side quit early; its output says why
            out, err = await asyncio.wait_for(reading, answer_within)
            await proc.wait()
        except BaseException as error:
            reading.cancel()
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._stalled(f"shipping {local.name}") from None
            raise
        assert proc.returncode is not None
        self._check_transport_failure(proc.returncode, err)
        done = Completed(proc.returncode, out, err)
        if "ok" not in done.fields():
            raise_for_failed_upload(self.alias, local, done)

    async def download(
        self, run_dir: str, rel: str, dest: Path, progress: Progress | None = None
    ) -> str:
        proc = await self._spawn(
            "send",
            [run_dir, rel],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        digest = hashlib.sha256()
        errors = asyncio.ensure_future(proc.stderr.read())
        try:
            with open(dest, "wb") as sink:
                while chunk := await asyncio.wait_for(proc.stdout.read(CHUNK), STALL_TIMEOUT):
                    sink.write(chunk)
                    digest.update(chunk)
                    if progress:
                        progress(len(chunk))
            err = await asyncio.wait_for(errors, STALL_TIMEOUT)
            await proc.wait()
        except BaseException as error:
            errors.cancel()
            await _reap(proc)
            if isinstance(error, TimeoutError):
                raise self._stalled(f"reading {rel}") from None
            raise
        assert proc.returncode is not None
        self._check_transport_failure(proc.returncode, err)
        # send.sh hashed the bytes as it sent them; its verdict is a machine line on stderr.
        said = machine_lines(err)
        if "changed" in said:
            raise fetch_unverified(rel)
        if proc.returncode != 0:
            raise app_error(
                Kind.TRANSFER_FAILED,
                f"{self.alias}: reading {rel} failed: "
                f"{Completed(proc.returncode, b'', err).error_text}",
            )
        got = digest.hexdigest()
        if said.get("sent") != [got]:
            raise fetch_unverified(rel)
        return got


async def _reap(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(Exception):
        await proc.wait()


def fetch_unverified(rel: str) -> RpcError:
    """The error for a fetched file whose bytes the far side did not vouch for."""
    return app_error(
        Kind.TRANSFER_FAILED,
        f"{rel} arrived with another sha256 than the host computed (it changed while "
        "fetching, or the copy was damaged); nothing was written under its name. Try again.",
        path=rel,
    )


def raise_for_failed_upload(alias: str, local: Path, done: Completed) -> NoReturn:
    """The error for a receive (or put_chunk) answer that is not `ok`; every transport's."""
    fields = done.fields()
    if "mismatch" in fields:
        raise app_error(
            Kind.TRANSFER_FAILED,
            f"{alias}: {local.name} arrived damaged (sha256 mismatch); nothing was kept. "
            "Try again.",
        )
    if "error" in fields and "No space" in " ".join(fields["error"]):
        raise app_error(
            Kind.DISK_FULL,
            f"{alias}: the disk is full; {local.name} was not shipped "
            f"({' '.join(fields['error'][1:])}).",
        )
    raise app_error(
        Kind.TRANSFER_FAILED,
        f"{alias}: shipping {local.name} failed: "
        f"{' '.join(fields.get('error', [])) or done.error_text}",
    )
