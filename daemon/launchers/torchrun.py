"""The `torchrun` launcher: the run is a detached process (as `process`) whose trainer is
torchrun, running one rank per GPU on the host.

The ranks are children of torchrun's agent, in sessions of their own; they carry the run's
marker, so the process launcher's status and stop find every one of them. What differs is
the command (`{torchrun}` expands to the words below), the grace a stop gives (the agent
waits 30 s for its ranks after SIGTERM), and the far side's failure report, which names the
rank that failed first (`torchrun_failure` in common.sh reads `torchrun_logs/`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.protocol.messages import RunLauncher

from .process import ProcessLauncher

# Each rank's error file (TORCHELASTIC_ERROR_FILE) lands under this folder of the run dir.
TORCHRUN_LOGS = "torchrun_logs"
MODULE = "torch.distributed.run"


class TorchrunLauncher(ProcessLauncher):
    name: RunLauncher = "torchrun"
    # torchrun's agent gives its ranks 30 s after SIGTERM before it kills them: wait for it.
    default_grace = 35.0


def torchrun_words(python: str, ranks: int) -> list[str]:
    """torchrun for `ranks` ranks with the run's python. `--standalone` rendezvouses on
    localhost port 0, a port the kernel picks free, so runs side by side never meet on
    29500; `--log-dir` keeps each rank's error file in the run dir."""
    return [
        python,
        "-m",
        MODULE,
        "--standalone",
        f"--nproc-per-node={ranks}",
        f"--log-dir={TORCHRUN_LOGS}",
    ]


def is_torchrun(command: Sequence[str] | None) -> bool:
    """Whether a run's recorded command runs torchrun (as `{torchrun}` expands)."""
    # within the first words: after a GPU gate's own (see operations/gpu_sharing.py)
    return command is not None and MODULE in command[:16]


TORCHRUN = TorchrunLauncher()
