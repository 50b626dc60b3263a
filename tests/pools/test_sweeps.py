"""`rtrain sweep @lab`: one run per point, named from the sweep and recording its
parameters, through the pool's placement and queue, at most --max-parallel at once; the
sweep as one object (status, wait, stop, rm)."""

from __future__ import annotations

import re

from tests.pools.conftest import Lab

# Says its values, runs until the file `finish` appears in its run dir, then says when it
# ran (this machine's clock: every host is this machine).
TIMED = (
    "import os, time\n"
    "began = time.time()\n"
    "print('lr={lr} bs={bs} started', flush=True)\n"
    "while not os.path.exists('finish'): time.sleep(0.05)\n"
    "print('lr={lr} bs={bs} ran', began, time.time(), flush=True)\n"
)
HOLD = "import os, time\nwhile not os.path.exists('finish'): time.sleep(0.05)\n# {lr}"


def test_a_six_run_sweep_over_three_hosts_keeps_to_max_parallel_and_waits_whole(
    lab: Lab,
) -> None:
    lab.configure({"lab": ["box1", "box2", "box3"]})
    name = f"sw{lab.tag}"
    started = lab(
        "sweep", "@lab", "--name", name, "--grid", "lr=1e-4,3e-4,1e-3", "--grid", "bs=16,32",
        "--max-parallel", "2", "--", "{python}", "-c", TIMED,
    )  # fmt: skip
    assert started.code == 0, started
    assert f"{name}-1 (lr=1e-4 bs=16): placed on " in started.out, started
    assert f"{name}-2 (lr=1e-4 bs=32): placed on " in started.out, started
    assert started.out.count(": queued: ") == 4, started  # nothing ended: 2 at once
    assert f"{name}-3 (lr=3e-4 bs=16): queued: waiting for a run of sweep {name}" in started.out
    status = lab("sweep", "status", name)
    assert "2 queued" not in status.err and "4 queued" in status.err, status

    def all_done() -> bool:
        runs = lab("runs", "--sweep", name, "--json").json()
        for run in runs:  # let whatever runs now end; the daemon places the next ones
            if run["state"] == "running" and not run["host"].startswith("@"):
                lab.finish(run["host"], run["runId"])
        return len(runs) == 6 and all(run["state"] == "completed" for run in runs)

    lab.wait_until(all_done, f"every run of {name} completed")
    waited = lab("wait", "--sweep", name)
    assert waited.code == 0, waited
    assert waited.out.count(": completed") == 6, waited

    runs = lab("runs", "--sweep", name, "--json").json()
    assert sorted(r["runId"] for r in runs) == [f"{name}-{i}" for i in range(1, 7)]
    points = {(r["params"]["lr"], r["params"]["bs"]) for r in runs}
    assert points == {(lr, bs) for lr in ("1e-4", "3e-4", "1e-3") for bs in ("16", "32")}
    spans = []
    for run in runs:
        log = (lab.far_run_dir(run["host"], run["runId"]) / "train.log").read_text()
        said = re.search(r"^lr=(\S+) bs=(\S+) ran (\S+) (\S+)$", log, re.MULTILINE)
        assert said, log
        assert (said[1], said[2]) == (run["params"]["lr"], run["params"]["bs"])
        spans.append((float(said[3]), float(said[4])))
    most = max(sum(1 for b, e in spans if b <= at < e) for at, _ in spans)
    assert most <= 2, spans
    assert len({r["host"] for r in runs}) >= 2, runs


def test_stop_and_rm_of_a_sweep_leave_nothing_on_any_host(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box2", "box3"]})
    name = f"rm{lab.tag}"
    started = lab(
        "sweep", "@lab", "--name", name, "--grid", "lr=1,2,3,4", "--max-parallel", "2",
        "--", "{python}", "-c", HOLD,
    )  # fmt: skip
    assert started.code == 0, started
    status = lab("sweep", "status", name)
    assert "2 queued" in status.err, status
    refused = lab("sweep", "rm", name)
    assert refused.code != 0 and f"rtrain sweep stop {name}" in refused.err, refused

    stopped = lab("sweep", "stop", name)
    assert stopped.code == 0 and "stopped 4 run(s)" in stopped.err, stopped
    runs = lab("runs", "--sweep", name, "--json").json()
    assert {r["state"] for r in runs} == {"stopped"}, runs
    waited = lab("sweep", "wait", name)
    assert waited.code == 3, waited  # ended, but stopped: `rtrain wait`'s exit for stopped

    removed = lab("sweep", "rm", name)
    assert removed.code == 0 and "removed 4 run(s)" in removed.err, removed
    assert lab("runs", "--sweep", name, "--json").json() == []
    for alias in ("box1", "box2", "box3"):
        workdir = lab.hosts.home(alias) / ".rtrain-pl" / lab.tag
        left = (
            [p.name for p in workdir.iterdir() if not p.name.startswith(".")]
            if workdir.exists()
            else []
        )
        assert left == [], (alias, left)
    free = {h["alias"]: h["gpusFree"] for h in lab.pools()["lab"]["hosts"]}
    assert free == {"box1": 1, "box2": 1, "box3": 2}


def test_a_value_a_shell_would_read_is_refused_before_anything_runs(lab: Lab) -> None:
    lab.configure({"lab": ["box1"]})
    refused = lab("sweep", "@lab", "--grid", "lr=1;touch x", "--", "sh", "-c", "echo {lr}")
    assert refused.code == 2, refused
    assert "value '1;touch x' of lr is not usable" in refused.err, refused
    unused = lab("sweep", "@lab", "--grid", "lr=1,2", "--", "echo", "hello")
    assert unused.code == 2 and "never uses {lr}" in unused.err, unused
    assert not (lab.hosts.home("box1") / ".rtrain-pl" / lab.tag).exists()
