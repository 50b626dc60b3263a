"""A run that failed for want of torch says where torch is: the python preflight found it in
on that host (docs/cli.md, preflight), or how to find one."""

from __future__ import annotations

import re

import msgspec

from rtrain.protocol.messages import RunInfo

# Python's words when the trainer imports torch (or a part of it) where it is not installed.
_NO_TORCH = re.compile(r"No module named '?torch(?:\.\w+)*'?")
# The hint's own words: it is added once.
_SAID = "has no torch:"


def with_torch_hint(run: RunInfo, found: str | None) -> RunInfo:
    """`run`, its reason followed by where torch is when it failed of `No module named
    'torch'`; `found`: the python preflight would pick on the run's host, if it ran there."""
    reason = run.reason
    if run.state != "failed" or not reason or _SAID in reason or not _NO_TORCH.search(reason):
        return run
    python = _python_of(run)
    if found and found != python:
        where = f"preflight found torch in {found} (start with --python {found})"
    else:
        where = f"`rtrain preflight {run.host}` names a python that has it"
    return msgspec.structs.replace(run, reason=f"{reason}; {python} {_SAID} {where}")


def _python_of(run: RunInfo) -> str:
    """The run's python as its command names it (its first word), else in words."""
    first = run.command[0] if run.command else ""
    return first if "python" in first.rsplit("/", 1)[-1] else "the run's python"
