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
# The launchers a host's config.toml picks with `scheduler = WORD` (its runs are that
# scheduler's batch jobs); each word is also the launcher's RunLauncher word.
Scheduler = Literal["slurm"]

LAUNCHERS: Final[tuple[Launcher, ...]] = get_args(Launcher)
# Whether the launcher a start names by its word runs the trainer under torchrun (on a Slurm
# host, `--launcher` says this of the batch job).
RUNS_TORCHRUN: Final[dict[Launcher, bool]] = {"process": False, "torchrun": True}
