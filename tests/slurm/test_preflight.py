"""`rtrain preflight` of a Slurm host, against the suite's real cluster: the partition leads
the verdict, and what preflight sees of the login node is labelled as the login node's."""

from __future__ import annotations

import time

from rtrain.daemon.operations.cluster_preflight import login_node
from rtrain.protocol.messages import Finding
from tests.slurm.test_slurm_runs import ClusterCli, cluster  # noqa: F401 (the fixture)

WAIT_S = 60.0


def rows(on: ClusterCli, *options: str) -> list[str]:
    done = on.cli("preflight", "cluster", "--workdir", on.workdir, *options)
    assert done.code == 0, done
    assert done.out_lines[0] == "cluster is ready to train.", done
    return [line.strip() for line in done.out_lines[1:]]


def test_a_slurm_host_says_its_partition_nodes_and_free_gpus(cluster: ClusterCli) -> None:  # noqa: F811
    found = rows(cluster, "--gpus", "1")
    assert found[0] == "transport: cluster over exec"
    assert found[1] == "slurm: partition gpu (the default): up, 1 node (idle), 2 of 2 GPUs free now"
    assert "slurm: accounting answers (sacct)" in found
    # The python preflight reached is the login node's: labelled, never as the run's.
    assert any(line.startswith("python (login node): python3") for line in found), found
    unlabelled = ("python:", "torch:", "gpu:", "driver:")
    assert not [line for line in found if line.startswith(unlabelled)], found

    as_json = cluster.cli("preflight", "cluster", "--workdir", cluster.workdir, "--json").json()
    assert "gpus" not in as_json and "gpusFree" not in as_json, as_json
    assert (as_json["slurm"]["partition"], as_json["slurm"]["freeGpus"]) == ("gpu", 2)

    # GPUs taken by a job outside rtrain: the partition says so at once.
    cluster.take_all_gpus()
    deadline = time.monotonic() + WAIT_S
    while True:
        partition = rows(cluster, "--gpus", "1")[1]
        if "0 of 2 GPUs free now" in partition:
            break
        assert time.monotonic() < deadline, partition
        time.sleep(0.5)
    assert partition.startswith("slurm: partition gpu (the default): up, 1 node ("), partition


def test_the_login_nodes_gpus_are_labelled_and_never_a_warning() -> None:
    labelled = login_node(
        [
            Finding("python", "python3 (/usr/bin/python3): Python 3.11.2"),
            Finding("gpu", "GPU 0: NVIDIA H100 80GB HBM3, pid 7 python (not rtrain's)", "warning"),
            Finding("torch", "python3 has no torch; /opt/v/bin/python has torch 2.5", "warning"),
        ]
    )
    assert [(f.topic, f.level) for f in labelled] == [
        ("python (login node)", "ok"),
        ("gpu (login node)", "info"),
        ("torch (login node)", "warning"),
    ]
