"""The `torchrun` launcher: the run is a detached process (as `process`) whose trainer is
torchrun, running one rank per GPU on the host.

The ranks are children of torchrun's agent, in sessions of their own; they carry the run's
marker, so the process launcher's status and stop find every one of them. What differs is
the command (`{torchrun}` expands to the words below), the grace a stop gives (the agent
waits 30 s for its ranks after SIGTERM), and the far side's failure report, which names the
rank that failed first (`torchrun_failure` in lib/failure.sh).

On a host of its own, torchrun runs under `rtrain-ranks` (remote/rank_lines.py): each rank
writes its own files and the relay copies their whole lines to train.log as `[rankN]: LINE`,
so ranks printing at once never merge, and it records which rank failed first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib import resources

from rtrain.daemon.launchers.process.launcher import ProcessLauncher

# Each rank's error file (TORCHELASTIC_ERROR_FILE) lands under this folder of the run dir.
TORCHRUN_LOGS = "torchrun_logs"
MODULE = "torch.distributed.run"
# The relay, shipped into the run dir, and what it writes there when a rank failed.
RANKS_FILE = "rtrain-ranks"
FAILURE_FILE = "rank_failure"


class TorchrunLauncher(ProcessLauncher):
    name = "torchrun"
    # torchrun's agent gives its ranks 30 s after SIGTERM before it kills them: wait for it.
    default_grace = 35.0
    runs_torchrun = True

    @classmethod
    def claims_command(cls, command: Sequence[str] | None) -> bool:
        return is_torchrun(command)


def torchrun_words(python: str, ranks: int, run_dir: str | None = None) -> list[str]:
    """torchrun for `ranks` ranks with the run's python. `--standalone` rendezvouses on
    localhost port 0, a port the kernel picks free, so runs side by side never meet on
    29500; `--log-dir` keeps each rank's error file in the run dir. With `run_dir` (a run on
    a host of its own, where RANKS_FILE is shipped), under the relay that keeps lines whole."""
    words = [
        python,
        "-m",
        MODULE,
        "--standalone",
        f"--nproc-per-node={ranks}",
        f"--log-dir={TORCHRUN_LOGS}",
    ]
    if run_dir is None:
        return words
    return [python, f"{run_dir}/{RANKS_FILE}", run_dir, TORCHRUN_LOGS, *words, "--redirects=3"]


def shown_command(command: list[str]) -> list[str]:
    """A recorded command as its user gave it (`{torchrun}` expanded): without the relay's
    words, which are rtrain's own (`PYTHON RUN_DIR/rtrain-ranks RUN_DIR torchrun_logs` before
    torchrun, `--redirects=3` after its options)."""
    at = next((i for i, w in enumerate(command[:16]) if w.endswith(f"/{RANKS_FILE}")), None)
    if at is None or at < 1 or len(command) < at + 3:
        return command
    shown = command[: at - 1] + command[at + 3 :]
    if "--redirects=3" in shown[:16]:
        shown.remove("--redirects=3")
    return shown


def uses_relay(command: Sequence[str]) -> bool:
    """Whether an expanded command runs torchrun under the relay (which must be shipped)."""
    return any(word.endswith(f"/{RANKS_FILE}") for word in command[:16])


@cache
def relay_source() -> bytes:
    """The relay's text, as shipped (remote/rank_lines.py)."""
    return (resources.files("rtrain.daemon.remote") / "rank_lines.py").read_bytes()


def is_torchrun(command: Sequence[str] | None) -> bool:
    """Whether a run's recorded command runs torchrun (as `{torchrun}` expands)."""
    # within the first words: after a GPU gate's own (see operations/gpu_sharing.py)
    return command is not None and MODULE in command[:16]
