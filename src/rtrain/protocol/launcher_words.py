"""The launchers' names on the wire: the one place a new launcher is named outside its own
package and the daemon's launcher registry (daemon/launchers/registry.py)."""

from __future__ import annotations

from typing import Final, Literal, get_args

# How a start may ask a run to be run: `process` (one detached process tree), `torchrun` (N
# ranks on one host); null lets the command and the host decide.
Launcher = Literal["process", "torchrun"]
# How a run was run, as it records it: a launcher of the host's own, a Slurm batch job, or
# torchrun across several hosts (`nodes`: one torchrun per host, rendezvous on the first).
RunLauncher = Literal["process", "torchrun", "slurm", "nodes"]

LAUNCHERS: Final[tuple[Launcher, ...]] = get_args(Launcher)
