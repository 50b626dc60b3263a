"""A run's launch: gpus.sh's claims, prepare.sh's run directory, launch.sh's stdin and
answer (discard.sh undoes a start that never launched)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

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
from .file_scripts import Placed, cache_listing, placed_answer

log = logging.getLogger(__name__)


# ---- gpus.sh -----------------------------------------------------------------------------


class GpuSlot(msgspec.Struct, frozen=True):
    """One GPU as the runs of a workdir share it: `free`, `held` (by run `holder`), or
    `busy` (`used_mib` in use by a process that is no run of this workdir)."""

    index: int
    state: str
    holder: str | None
    used_mib: int | None


class GpuClaims(Answer, frozen=True, kw_only=True):
    total: int
    gpus: list[GpuSlot]

    @property
    def free(self) -> list[int]:
        return [slot.index for slot in self.gpus if slot.state == "free"]


async def gpu_claims(
    transport: Runner,
    workdir: str,
    share: bool,
    run_id: str | None = None,
) -> GpuClaims:
    """gpus.sh look: which GPUs of the host the runs of `workdir` hold now (`run_id`'s own
    claims counting as free)."""
    args = ["look", workdir, "1" if share else "0", run_id or "-"]
    done = await transport.run("gpus", args, timeout=60)
    lines = Lines(done.stdout)
    slots = []
    for row in lines.rows("gpu"):
        index = as_int(row[0]) if row else None
        if index is None or len(row) < 3:
            continue
        state = row[1]
        slots.append(
            GpuSlot(
                index=index,
                state=state,
                holder=row[2] if state == "held" else None,
                used_mib=as_int(row[2]) if state == "busy" else None,
            )
        )
    return GpuClaims(
        total=as_int(lines.value("gpus_total")) or 0,
        gpus=slots,
        exit=done.returncode,
        error_text=done.error_text,
    )


class Reserved(Answer, frozen=True, kw_only=True):
    """GPUs claimed for a run before it is shipped (`gpus`), or `busy`: too few free."""

    gpus: list[int]
    busy: bool


async def reserve_gpus(
    transport: Runner, workdir: str, run_id: str, count: int, share: bool
) -> Reserved:
    """gpus.sh reserve: the far side's atomic claim that decides between racing placements."""
    done = await transport.run(
        "gpus", ["reserve", workdir, run_id, str(count), "1" if share else "0"], timeout=60
    )
    lines = Lines(done.stdout)
    words = (lines.value("reserved") or "").split(",")
    indexes = [i for i in (as_int(w) for w in words) if i is not None]
    return Reserved(
        gpus=indexes,
        busy=done.returncode == Exit.GPUS_BUSY,
        exit=done.returncode,
        error_text=done.error_text,
    )


async def release_gpus(transport: Runner, workdir: str, run_id: str) -> int:
    """gpus.sh release: drops the run's reservations (a placement that did not launch);
    its exit status."""
    done = await transport.run("gpus", ["release", workdir, run_id], timeout=60)
    return done.returncode


# ---- prepare.sh and launch.sh ------------------------------------------------------------


class Prepared(Answer, frozen=True, kw_only=True):
    """The run dir claimed (`run_dir`), or why not: `exists` when the run id is taken. With
    inputs listed, `placement` is the cache's placement of them into the new run dir."""

    run_dir: str | None
    exists: bool
    placement: Placed | None = None


async def prepare(
    transport: Runner,
    workdir: str,
    run_id: str,
    inputs: Sequence[tuple[str, int, str]] | None = None,
) -> Prepared:
    """prepare.sh; with `inputs` (sha256, size, name), the ones the host's cache holds are
    placed in the run dir in the same far call (cache_place.sh's work)."""
    if inputs is None:
        done = await transport.run("prepare", [workdir, run_id], timeout=60)
    else:
        args = [workdir, run_id, "place"]
        done = await transport.run("prepare", args, stdin=cache_listing(inputs), timeout=120)
    lines = Lines(done.stdout)
    # With `place` the claim stands once `run_dir` is said, whatever the placement did.
    claimed = done.returncode == Exit.OK or (inputs is not None and "run_dir" in lines)
    run_dir = (lines.value("run_dir") or None) if claimed else None
    return Prepared(
        run_dir=run_dir,
        exists=done.returncode == Exit.RUN_EXISTS or said(lines, ErrorWord.RUN_EXISTS),
        placement=placed_answer(done, inputs) if inputs is not None and run_dir else None,
        exit=done.returncode,
        error_text=done.error_text,
    )


class Discarded(Answer, frozen=True, kw_only=True):
    """The run dir of a start that launched nothing is gone (`ok`), or why not (`error`:
    `already_launched`, `not_a_run`, `rm ...`)."""

    ok: bool
    error: FarError | None


async def discard(transport: Runner, workdir: str, run_id: str) -> Discarded:
    done = await transport.run("discard", [workdir, run_id], timeout=30)
    lines = Lines(done.stdout)
    return Discarded(
        ok=done.returncode == Exit.OK and "discarded" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class LimitsLine(msgspec.Struct, frozen=True):
    """launch.sh's `+limits` line: limits.sh's arguments after the attempt."""

    max_duration: int  # seconds, 0: none
    stall_after: int  # seconds, 0: none
    on_stall: str  # flag | stop
    grace: float  # seconds the stop a limit makes waits after SIGTERM


def launch_stdin(
    secrets: Mapping[str, str],
    env: Mapping[str, str],
    setup: str | None,
    meta: Mapping[str, object],
    attempt: int = 1,
    wrapper: int = 0,
    limits: LimitsLine | None = None,
) -> bytes:
    """launch.sh's stdin: `NAME<TAB>base64` per secret, then the `+` lines for the rest of
    the launch (env, setup, extra meta.json keys, the attempt number of a restart, how
    many leading words of the command are rtrain's own wrapper, not the trainer's, and the
    limits the host watches)."""

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    lines = [f"{name}\t{b64(value)}" for name, value in secrets.items()]
    lines += [f"+env\t{name}\t{b64(value)}" for name, value in env.items()]
    if setup is not None:
        lines.append(f"+setup\t{b64(setup)}")
    for key, value in meta.items():
        lines.append(f"+meta\t{key}\t{b64(msgspec.json.encode(value).decode())}")
    if attempt != 1:
        lines.append(f"+attempt\t{attempt}")
    if wrapper:
        lines.append(f"+wrapper\t{wrapper}")
    if limits is not None:
        lines.append(
            f"+limits\t{limits.max_duration}\t{limits.stall_after}\t{limits.on_stall}\t"
            f"{limits.grace:.1f}"
        )
    return "".join(f"{line}\n" for line in lines).encode()


class LaunchInput(msgspec.Struct, frozen=True):
    """launch_stdin's lines, split again for a launcher that is not launch.sh: the secret
    lines as they were (still only for stdin), and the values of the `+` lines."""

    secrets: bytes
    env: dict[str, str]
    setup: str | None
    # Extra meta.json keys, decoded from their JSON; the attempt a restart starts.
    meta: dict[str, object]
    attempt: int


def split_launch_stdin(data: bytes) -> LaunchInput:
    secrets: list[bytes] = []
    env: dict[str, str] = {}
    setup = None
    meta: dict[str, object] = {}
    attempt = 1
    for line in data.splitlines():
        if not line.startswith(b"+"):
            secrets.append(line + b"\n")
            continue
        key, *values = line.decode().split("\t")
        if key == "+env" and len(values) == 2:
            env[values[0]] = base64.b64decode(values[1]).decode()
        elif key == "+setup" and len(values) == 1:
            setup = base64.b64decode(values[0]).decode()
        elif key == "+meta" and len(values) == 2:
            meta[values[0]] = msgspec.json.decode(base64.b64decode(values[1]))
        elif key == "+attempt" and len(values) == 1 and values[0].isdigit():
            attempt = int(values[0])
    return LaunchInput(secrets=b"".join(secrets), env=env, setup=setup, meta=meta, attempt=attempt)


class Launched(Answer, frozen=True, kw_only=True):
    """The trainer's session leader (`pid`), or for a batch job its id (`job_id`), or why
    not (`error`: the `error` line's words). `already_launched`: an earlier launch of the
    same run claimed it first."""

    pid: int | None
    started_at: float | None
    error: FarError | None
    already_launched: bool
    # A restart of a run that is running, or of one that was never launched.
    running: bool = False
    never_launched: bool = False
    job_id: str | None = None


async def launch(
    transport: Runner,
    run_dir: str,
    run_id: str,
    python: str,
    command: Sequence[str],
    secrets: bytes,
) -> Launched:
    """launch.sh; `secrets` are `NAME<TAB>base64` lines, sent on stdin only."""
    done = await transport.run(
        "launch", [run_dir, run_id, python, *command], stdin=secrets, timeout=60
    )
    return launched(done)


def launched(done: Completed) -> Launched:
    """launch.sh's answer."""
    lines = Lines(done.stdout)
    pid = as_int(lines.value("pid")) if done.returncode == Exit.OK else None
    return Launched(
        pid=pid,
        started_at=as_float(lines.value("started_at")),
        error=lines.error(),
        already_launched=said(lines, ErrorWord.ALREADY_LAUNCHED),
        running=said(lines, ErrorWord.RUNNING),
        never_launched=said(lines, ErrorWord.NEVER_LAUNCHED),
        exit=done.returncode,
        error_text=done.error_text,
    )


class FedRunner(Protocol):
    """A transport that runs a script now and gives it its stdin later (Transport.run_fed)."""

    async def run_fed(
        self, name: str, args: Sequence[str], feed: asyncio.Future[bytes], *, timeout: float = 60
    ) -> Completed: ...


# A `+meta` line at least this long goes after the go (ahead_stdin).
TAIL_AT = 4096
# How long a launch ahead that stands down may take to say so before its channel is closed
# (which ends it all the same).
STAND_DOWN_WAIT = 5.0


class LaunchAhead:
    """launch.sh opened before its run directory is claimed (`--ahead`), on a channel of its
    own beside the claim, waiting on its stdin: the two round trips that open a channel
    overlap the claim and the shipping. `go` hands it the launch; without the go (its
    `stand_down`, a daemon gone, which closes the channel) it ends and launches nothing."""

    def __init__(self, transport: FedRunner, run_id: str) -> None:
        self.transport = transport
        self._feed: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        # The run id shows in `ps` which start's launch waits there; the go must be its.
        self._answer = asyncio.ensure_future(
            transport.run_fed("launch", ["--ahead", run_id], self._feed, timeout=60)
        )

    @property
    def waiting(self) -> bool:
        """Whether it still waits for the go (it may have ended, or given its channel up)."""
        return not self._feed.done() and not self._answer.done()

    async def go(
        self, run_dir: str, run_id: str, python: str, command: Sequence[str], secrets: bytes
    ) -> Launched:
        """launch.sh's work, as `launch` does it; only while `waiting`."""
        self._feed.set_result(ahead_stdin([run_dir, run_id, python, *command], secrets))
        return launched(await self._answer)

    async def stand_down(self) -> None:
        """End it without a launch, unless it had its go (then its answer is in)."""
        if not self._feed.done():
            self._feed.set_result(b"")
        try:
            async with asyncio.timeout(STAND_DOWN_WAIT):
                await asyncio.shield(self._answer)
        except TimeoutError:
            self._answer.cancel()
        except Exception as error:  # the host went away: its channel, and the script, with it
            log.info("launch ahead: %s", error)
        with contextlib.suppress(BaseException):
            await self._answer


def ahead_stdin(argv: Sequence[str], launch_input: bytes) -> bytes:
    """launch.sh --ahead's stdin: its arguments, then launch_stdin's lines, then the go."""

    def line(word: str) -> str:
        # A word as it is (no process to decode it there), unless a line break is in it.
        if "\n" not in word:
            return f"={word}\n"
        return f"b{base64.b64encode(word.encode()).decode()}\n"

    head = f"+args\t{len(argv)}\n" + "".join(line(word) for word in argv)
    lines = launch_input.splitlines(keepends=True)
    # The longest `+meta` line (a code tree's inputs: 300 KB for 3,000 files) goes after the
    # go, where one cat takes it; the far shell's `read` takes a byte per system call.
    metas = [one for one in lines if one.startswith(b"+meta\t")]
    longest = max(metas, key=len, default=b"")
    if len(longest) < TAIL_AT:
        return head.encode() + launch_input + b"+go\n"
    lines.remove(longest)
    tail = longest.removeprefix(b"+meta\t")
    return head.encode() + b"".join(lines) + b"+go\n" + tail + b"+end\n"
