"""limits.sh through launch.sh, as the daemon starts it: a watcher of the attempt, detached and
unmarked, that stops a run past its maximum duration as stop.sh does, flags a still one in
the status row, and ends with the run; a bad `+limits` line launches nothing."""

from __future__ import annotations

from pathlib import Path

from rtrain.daemon.remote import script

from .conftest import (
    PYTHON,
    Launched,
    Remote,
    alive,
    assert_run_ends,
    marked_pids,
    proc_environ,
    wait_for,
)

STILL = "import time; print('sleeping', flush=True); time.sleep(120)"
# Still until the file `go` appears in its run dir; then it writes a line every 0.1 s.
WAKES_ON_GO = (
    "import os, time\nprint('waiting', flush=True)\n"
    "while not os.path.exists('go'): time.sleep(0.1)\n"
    "while True:\n    print('step', flush=True)\n    time.sleep(0.1)\n"
)


def launch_limited(remote: Remote, code: str, limits: str) -> tuple[str, Path]:
    """launch.sh of `python -c CODE` with `+limits LIMITS` (tab-separated), the watcher's
    scripts in the run dir as a start ships them."""
    run_id, run_dir = remote.prepare()
    (run_dir / "rtrain-limits").write_text(script("limits"))
    (run_dir / "rtrain-stop").write_text(script("stop"))
    done = remote.run(
        "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", code,
        stdin=f"+limits\t{limits}\n".encode(),
    )  # fmt: skip
    assert done.returncode == 0, done
    return run_id, run_dir


def watchers(run_id: str) -> list[int]:
    """Live watchers of the run's limits: `/bin/sh ./rtrain-limits RUN_DIR RUN_ID ...`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The watcher, not the setsid that starts it (its parent for a moment).
        if argv[:2] == [b"/bin/sh", b"./rtrain-limits"] and run_id.encode() in argv:
            if alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def the_watcher(run_id: str) -> int:
    """The run's one watcher, once it runs (a subshell of its own look shares its argv for a
    moment, so wait for a look that finds it alone)."""
    found: list[int] = []

    def alone() -> bool:
        found[:] = watchers(run_id)
        return len(found) == 1

    wait_for(alone, what="the watcher")
    return found[0]


def test_a_run_past_its_max_duration_is_stopped_and_its_row_says_why(remote: Remote) -> None:
    run_id, run_dir = launch_limited(remote, STILL, "2\t0\tflag\t1.0")
    # The watcher is no part of the run: it runs, but carries no marker (conftest's kill
    # and status's liveness both go by the marker).
    watcher = the_watcher(run_id)
    assert watcher not in marked_pids(run_id)
    assert not [v for v in proc_environ(watcher) if v.startswith(b"RTRAIN_RUN_ID=")]
    assert_run_ends(run_id)
    wait_for(lambda: remote.status(run_id)[1] == "stopped", what="stopped")
    row = remote.status(run_id)
    assert row[5] == "limit: max_duration 2"
    assert (run_dir / ".rtrain" / "stop_requested").exists()
    wait_for(lambda: not watchers(run_id), what="the watcher to end")


def test_a_still_run_is_flagged_in_its_row_until_it_moves(remote: Remote) -> None:
    run_id, run_dir = launch_limited(remote, WAKES_ON_GO, "0\t2\tflag\t1.0")
    wait_for(lambda: remote.status(run_id)[6] != "-", what="the stall flag")
    row = remote.status(run_id)
    assert row[1] == "running" and int(row[6]) >= 0
    (run_dir / "go").write_text("")
    wait_for(lambda: remote.status(run_id)[6] == "-", what="the flag to go")
    assert remote.status(run_id)[1] == "running"
    remote.stop(Launched(run_id, run_dir, 0, 0), grace="1", force="1")
    wait_for(lambda: not watchers(run_id), what="the watcher to end")


def test_a_bad_limits_line_launches_nothing(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    for bad in ("6h\t0\tflag\t1.0", "1\t1\tkill\t1.0", "1\t1\tstop\t-1"):
        done = remote.run(
            "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", STILL,
            stdin=f"+limits\t{bad}\n".encode(),
        )  # fmt: skip
        assert done.returncode == 2, (bad, done)
        assert done.values("error") == [["usage", "bad limits"]], done
        assert not (run_dir / "meta.json").exists()


def session_of(leader: int) -> list[int]:
    """Live processes of the session `leader` leads (the watcher and its `sleep`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[3] == str(leader) and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def test_a_stop_answers_once_the_watcher_and_its_sleep_are_gone(remote: Remote) -> None:
    run_id, run_dir = launch_limited(remote, STILL, "3600\t0\tflag\t1.0")
    watcher = the_watcher(run_id)
    wait_for(lambda: len(session_of(watcher)) >= 2, what="the watcher's sleep")
    done = remote.stop(Launched(run_id, run_dir, 0, 0), grace="5", force="1")
    assert done.value("outcome") == "stopped", done
    # Nothing of the run outlives the answer: not the watcher, not its sleep.
    assert session_of(watcher) == [], session_of(watcher)
    assert watchers(run_id) == [] and marked_pids(run_id) == []
