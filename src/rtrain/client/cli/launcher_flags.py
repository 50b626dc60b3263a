"""`rtrain start`'s launcher flags as the one launcher-options object of the start message
(protocol/launcher_options.py), built as plain JSON as every request builder's params are.

A host list (HOST1,HOST2) is a run across hosts; a Slurm flag (or `--nodes` on one host) is
a batch job's options, with `--launcher` saying whether the job runs torchrun; else
`--launcher` alone names the launcher. Flags of two launchers together are refused here, in
one sentence, before anything is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rtrain.protocol.launcher_words import LAUNCHERS, RUNS_TORCHRUN

from .output import fail

if TYPE_CHECKING:
    from rtrain.protocol.requests import (
        NodesOptions,
        ProcessOptions,
        SlurmOptions,
        TorchrunOptions,
    )

    Options = ProcessOptions | TorchrunOptions | NodesOptions | SlurmOptions


def launcher_options(
    hosts: list[str],
    launcher: str | None,
    *,
    partition: str | None,
    time_limit: str | None,
    nodes: int,
    signal_before_timeout: int | None,
    requeue: bool,
    master_addr: str | None,
) -> Options | None:
    """The start's launcher options from its flags; None when it gives none (the host's
    config.toml picks the launcher). Exits 2 with one sentence on flags that clash."""
    if launcher is not None and launcher not in RUNS_TORCHRUN:
        fail(f"--launcher must be {' or '.join(LAUNCHERS)}, not {launcher!r}.", 2)
    slurm = [
        flag
        for flag, value in (
            ("--partition", partition),
            ("--time", time_limit),
            ("--signal-before-timeout", signal_before_timeout),
            ("--requeue", requeue),
        )
        if value
    ]
    if hosts:
        return _across(hosts, launcher, slurm, nodes, master_addr)
    if master_addr is not None:
        fail("--master-addr is for a run across hosts (HOST1,HOST2 --nodes 2).", 2)
    if slurm or nodes != 1:
        return _job(launcher, partition, time_limit, nodes, signal_before_timeout, requeue)
    if launcher is not None:  # a word of RUNS_TORCHRUN (checked above): its own kind
        return cast("ProcessOptions | TorchrunOptions", {"kind": launcher})
    return None


def _across(
    hosts: list[str], launcher: str | None, slurm: list[str], nodes: int, master_addr: str | None
) -> NodesOptions:
    """A run across `hosts`: no Slurm flag and no --launcher beside them."""
    if slurm:
        fail(
            f"{', '.join(slurm)} apply to Slurm hosts only; a run across hosts "
            "(HOST1,HOST2) takes --nodes and --master-addr.",
            2,
        )
    if launcher is not None:
        fail(f"a run across hosts runs torchrun on each node; drop --launcher {launcher}.", 2)
    across: NodesOptions = {"kind": "nodes", "hosts": hosts}
    if nodes != 1:
        across["nodes"] = nodes
    if master_addr is not None:
        across["masterAddr"] = master_addr
    return across


def _job(
    launcher: str | None,
    partition: str | None,
    time_limit: str | None,
    nodes: int,
    signal_before_timeout: int | None,
    requeue: bool,
) -> SlurmOptions:
    """A Slurm job's options; --launcher says whether it runs torchrun."""
    job: SlurmOptions = {"kind": "slurm"}
    if partition is not None:
        job["partition"] = partition
    if time_limit is not None:
        job["time"] = time_limit
    if nodes != 1:
        job["nodes"] = nodes
    if signal_before_timeout is not None:
        job["signalBeforeTimeout"] = signal_before_timeout
    if requeue:
        job["requeue"] = True
    if launcher is not None:
        job["torchrun"] = RUNS_TORCHRUN[launcher]  # type: ignore[index]  # checked by the caller
    return job
