"""Each launcher's own start options, as one tagged union of the start message
(`StartParams.launcher`): `{"kind": "slurm", "partition": "gpu", ...}`.

A member is the options of one launcher (its `kind` is the launcher's wire word,
launcher_words.py); a start that names none runs as the host's config says. A field of one
launcher under another's `kind` is an unknown field (-32602), so options never reach a
launcher that would ignore them. Adding a launcher with options of its own adds one Struct
here and one member to `LauncherOptions`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

NodeCount = Annotated[int, msgspec.Meta(ge=1, le=4096)]
# Seconds before a batch job's time limit at which its trainer is warned (Slurm's
# --signal takes at most 65535).
WarningSeconds = Annotated[int, msgspec.Meta(ge=1, le=65535)]


class _Options(
    msgspec.Struct,
    rename="camel",
    forbid_unknown_fields=True,
    omit_defaults=True,
    frozen=True,
    tag_field="kind",
):
    """Base of one launcher's options; `kind` is its launcher's wire word."""


class ProcessOptions(_Options, tag="process", frozen=True):
    """One detached process tree on the host (never under torchrun)."""


class TorchrunOptions(_Options, tag="torchrun", frozen=True):
    """torchrun's ranks on the host, one per GPU."""


class NodesOptions(_Options, tag="nodes", frozen=True):
    """One torchrun run across hosts: every node's host, the first = the start's `host`;
    `nodes` must be their count. `masterAddr`: the address the other nodes reach the
    first at (default: its HostName as `ssh -G` resolves it)."""

    hosts: list[str] = []
    nodes: NodeCount = 1
    master_addr: str | None = None


class SlurmOptions(_Options, tag="slurm", frozen=True):
    """A batch job on a Slurm host; each given field overrides the host's config.toml.
    `signalBeforeTimeout`: seconds before the time limit at which the trainer gets SIGUSR2.
    `torchrun`: whether the job runs its trainer under torchrun (null: as the command
    says), as `--launcher torchrun` or `process` asks on a Slurm host."""

    partition: str | None = None
    time: str | None = None
    nodes: NodeCount = 1
    signal_before_timeout: WarningSeconds | None = None
    requeue: bool = False
    torchrun: bool | None = None


LauncherOptions = ProcessOptions | TorchrunOptions | NodesOptions | SlurmOptions


def asks_torchrun(options: LauncherOptions | None) -> bool | None:
    """Whether a start's options run the trainer under torchrun: always (True), never
    (False), or as the command says (None)."""
    if isinstance(options, SlurmOptions):
        return options.torchrun
    if isinstance(options, ProcessOptions):
        return False
    return None if options is None else True
