"""The one refusal for a run directory that is not a run of rtrain's.

Every far-side script that deletes, kills, launches in or reads from a run directory first
proves it is one (lib/run_dir.sh's prove_run_dir: the mark prepare.sh leaves, or the meta.json
launch.sh writes, naming the run id). A wrong `--workdir` or a typo in a run id then names a
plain directory, and the answer is this sentence, with nothing done.
"""

from __future__ import annotations

from rtrain.daemon.remote.contract.answers import Answer, Exit
from rtrain.protocol.errors import Kind, RpcError, app_error


def not_a_run(host: str, run_id: str, run_dir: str, nothing: str) -> RpcError:
    """`nothing`: what was left undone, in the operation's words (`nothing was removed`)."""
    return app_error(
        Kind.NOT_A_RUN,
        f"no run {run_id} on {host}: {run_dir} is not a run of rtrain (it holds no record of "
        f"run {run_id}); {nothing}. Check the run id and --workdir.",
    )


def refuse_unless_run(answer: Answer, host: str, run_id: str, run_dir: str, nothing: str) -> None:
    if answer.exit == Exit.NOT_A_RUN:
        raise not_a_run(host, run_id, run_dir, nothing)
