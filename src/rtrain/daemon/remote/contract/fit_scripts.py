"""fit.sh: whether a host can run one run now (its python, torch, image) and what it holds of
it already (inputs in the cache, the environment built, free space): a pool's placement
asks it of every host (docs/pools.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .answers import Answer, Lines, Runner, as_int

# What the run asks of the host's python: nothing, that it starts, that it finds torch.
Needs = Literal["-", "python", "torch"]


class Fit(Answer, frozen=True, kw_only=True):
    """`unfit`: why the run cannot go there (empty: it can); `env_built` None when the run
    has no environment or the host was not asked."""

    unfit: list[str]
    cached: int
    cached_bytes: int
    free_kib: int | None
    env_built: bool | None


async def fit(
    transport: Runner,
    workdir: str,
    python: str,
    needs: Needs,
    image: tuple[str, str] | None,
    inputs: Sequence[tuple[str, int]],
    builder_and_lock: tuple[bytes, bytes] | None,
) -> Fit:
    """`image`: (runtime, image); `inputs`: (sha256, size) pairs; `builder_and_lock`: the
    environment's builder and lock, for its key."""
    runtime, name = image if image is not None else ("auto", "-")
    args = [workdir, python, needs, runtime, name]
    for sha256, size in inputs:
        args += [sha256, str(size)]
    stdin = b""
    if builder_and_lock is not None and needs != "-":
        builder, lock = builder_and_lock
        stdin = str(len(builder)).encode() + b"\n" + builder + lock
    done = await transport.run("fit", args, stdin=stdin, timeout=60)
    lines = Lines(done.stdout)
    cached = (lines.last("cached") or []) + ["", ""]
    env = lines.last("env")
    return Fit(
        unfit=[row[0] for row in lines.rows("unfit") if row],
        cached=as_int(cached[0]) or 0,
        cached_bytes=as_int(cached[1]) or 0,
        free_kib=as_int(lines.value("free_kib")),
        env_built=None if env is None or len(env) < 2 else env[1] == "1",
        exit=done.returncode,
        error_text=done.error_text,
    )
