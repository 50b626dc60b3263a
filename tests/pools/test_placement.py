"""`rtrain start @lab`: a run goes to a host of the pool that can give it its GPUs now
(neither claimed by a run nor busy with another process), says where and why, and waits in
the pool's queue when no host can; the queue places runs as GPUs free."""

from __future__ import annotations

from tests.pools.conftest import Lab

LAB = {"lab": ["box1", "box2", "box3"]}


def test_placement_follows_free_gpus_and_the_queue_places_a_run_once_one_frees(
    lab: Lab,
) -> None:
    lab.configure(LAB)
    two, one, other, waiting = (lab.new_run_id(n) for n in ("two", "one", "other", "waiting"))

    started = lab.start(two, gpus=2)  # box3 alone has 2 free: box2's GPU 0 is someone's job
    assert started.code == 0, started
    assert "placed on box3: 2 of 2 GPUs free" in started.out, started
    assert lab.seen_gpus("box3", two) == "'0,1'"

    started = lab.start(one)  # box1 (1 of 1 free) is less loaded than box2 (1 of 2)
    assert lab.placed(started) == "box1", started
    started = lab.start(other)
    assert "placed on box2: 1 of 2 GPUs free" in started.out, started
    assert lab.seen_gpus("box2", other) == "'1'"  # never the GPU another process computes on

    queued = lab.start(waiting)
    assert queued.code == 0, queued
    assert (
        f"queued {waiting} in @lab: waiting for 1 GPU in lab: box1 0/1 free, box2 0/2 free, "
        "box3 0/2 free" in queued.out
    ), queued
    assert lab.status("@lab", waiting).startswith("queued (waiting for 1 GPU in lab")
    shown = lab.pools()["lab"]
    assert [run["runId"] for run in shown["queue"]] == [waiting]
    free = {host["alias"]: (host["gpusFree"], host["gpusTotal"]) for host in shown["hosts"]}
    assert free == {"box1": (0, 1), "box2": (0, 2), "box3": (0, 2)}
    listed = lab("runs", "--json").json()
    assert any(r["runId"] == waiting and r["host"] == "@lab" for r in listed), listed

    lab.finish("box1", one)  # its GPU frees: the daemon places the queued run there
    lab.wait_until(lambda: lab.far_run_dir("box1", waiting).exists(), f"{waiting} on box1")
    assert lab.seen_gpus("box1", waiting) == "'0'"
    lab.wait_until(lambda: lab.status("@lab", waiting) == "running", f"{waiting} running")
    placed = lab("status", "box1", waiting, "--json").json()
    assert placed["pool"] == "@lab"
    assert lab.pools()["lab"]["queue"] == []


def test_a_host_that_is_down_is_skipped_and_named(lab: Lab) -> None:
    lab.configure({"lab": ["closed", "box3"], "gone": ["closed"]})
    run_id = lab.new_run_id()
    started = lab.start(run_id)
    assert "placed on box3: 2 of 2 GPUs free" in started.out, started

    queued = lab.start(lab.new_run_id(), where="@gone")
    assert queued.code == 0, queued
    assert "waiting for 1 GPU in gone: closed unreachable" in queued.out, queued
    hosts = {h["alias"]: h for h in lab.pools()["lab"]["hosts"]}
    assert hosts["closed"]["reachable"] is False and hosts["closed"]["reason"]
    assert hosts["box3"]["gpusFree"] == 1


def test_bad_pools_are_refused_before_anything_runs(lab: Lab) -> None:
    lab.configure(LAB)
    unknown = lab.start(lab.new_run_id(), where="@nolab")
    assert unknown.code != 0
    assert "there is no pool 'nolab' in config.toml (pools: lab)" in unknown.err, unknown
    too_many = lab.start(lab.new_run_id(), gpus=3)
    assert too_many.code != 0
    assert "no host of lab has that many (box1: 1, box2: 2, box3: 2)" in too_many.err, too_many
    bad = lab.start(lab.new_run_id(), where="@-x")
    assert bad.code == 2 and "is not a usable name" in bad.err, bad
    both = lab("start", "box1", "--pool", "lab")
    assert both.code == 2 and "give HOST or --pool, not both" in both.err, both
    nodes = lab.start(lab.new_run_id(), "--nodes", "2")
    assert nodes.code != 0
    assert "a pool places a run on one host, and --nodes 2 asks for 2" in nodes.err, nodes
    assert "rtrain start box1,box2 --nodes 2" in nodes.err, nodes
    batch = lab.start(lab.new_run_id(), "--partition", "gpu")
    assert batch.code != 0 and "start the job on the Slurm host by name" in batch.err, batch
    for alias in ("box1", "box2", "box3"):
        assert not (lab.hosts.home(alias) / ".rtrain-pl" / lab.tag).exists()


def test_a_slurm_host_in_a_pool_is_refused_before_any_ssh(lab: Lab) -> None:
    lab.configure(LAB)
    config = lab.daemon.config / "rtrain" / "config.toml"
    config.write_text(
        config.read_text().replace("[hosts.box2]", '[hosts.box2]\nscheduler = "slurm"')
    )
    refused = lab.start(lab.new_run_id())
    assert refused.code != 0
    assert "pool lab lists box2, a Slurm host" in refused.err, refused
    assert "take it out of [pools.lab] in config.toml" in refused.err, refused
    for alias in ("box1", "box2", "box3"):
        assert not (lab.hosts.home(alias) / ".rtrain-pl" / lab.tag).exists()


def test_the_host_that_caches_the_inputs_goes_first(lab: Lab) -> None:
    lab.configure(LAB)
    data = lab.cwd / "data.bin"
    data.write_bytes(bytes(range(256)) * 4096)  # 1 MiB, shipped once into box3's cache
    first = lab.new_run_id("first")
    done = lab.start(first, "--dataset", str(data), where="box3", gpus=0)
    assert done.code == 0, done
    lab.finish("box3", first)  # its GPUs were never claimed; its input stays cached

    again = lab.start(lab.new_run_id("again"), "--dataset", str(data))
    # box1 (1 of 1 free) is the least loaded, but box3 holds the input already
    assert "placed on box3: 2 of 2 GPUs free, inputs cached" in again.out, again
    assert "already on box3, 0 B sent" in again.err, again
