"""A Slurm run that fails says why, as a run on any host does (status.sh's failure_reason,
through slurm_poll.sh's WHY)."""

from __future__ import annotations

from tests.slurm.test_slurm_runs import ClusterCli, cluster

__all__ = ["cluster"]  # the fixture, used by name

RAISES = ["python3", "-c", "print('step 1 | loss 1.0')\nraise ValueError('bad shape (3, 4)')"]


def test_a_failed_slurm_workload_says_its_last_exception_line(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, RAISES, "--gpus", "0")
    expected = "failed (exit 1, ValueError: bad shape (3, 4))"
    cluster.wait_status(run_id, expected)
    as_json = cluster.cli("status", "cluster", run_id, "--json").json()
    assert as_json["reason"] == "ValueError: bad shape (3, 4)", as_json
