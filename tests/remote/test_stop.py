"""stop.sh: every process of the run goes, or the answer says which ones did not."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from .conftest import Launched, Remote, alive, marked_pids, wait_file, wait_for

# Two workers, each with a grandchild: six processes with the marker, wrapper included.
TREE = """
import subprocess, sys, time
def spawn(code):
    return subprocess.Popen([sys.executable, "-c", code])
grandchild = "import time; time.sleep(120)"
worker = (
    "import subprocess, sys, time; "
    f"subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(120)"
)
workers = [spawn(worker) for _ in range(2)]
time.sleep(120)
"""

# A child that leaves the run's session and process group.
ESCAPING_CHILD = """
import subprocess, sys, time
code = "import os, time; os.setsid(); open('escaped', 'w').close(); time.sleep(120)"
subprocess.Popen([sys.executable, "-c", code])
time.sleep(120)
"""

# A child that ignores SIGTERM (and says so once it does).
STUBBORN_CHILD = """
import subprocess, sys, time
code = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "open('stubborn', 'w').close(); time.sleep(120)"
)
subprocess.Popen([sys.executable, "-c", code])
time.sleep(120)
"""


def run_processes(launched: Launched, count: int) -> list[int]:
    wait_for(lambda: len(marked_pids(launched.run_id)) == count, what=f"{count} processes")
    return marked_pids(launched.run_id)


def test_stops_the_trainer_and_all_its_descendants(remote: Remote) -> None:
    launched = remote.launch(TREE)
    pids = run_processes(launched, 6)

    result = remote.stop(launched)

    assert result.returncode == 0, result
    assert result.value("outcome") == "stopped"
    assert set(pids) <= {int(pid) for pid in result.value("killed").split()}
    assert not any(alive(pid) for pid in pids), "no process may survive, reparented or not"
    assert (launched.run_dir / ".rtrain" / "stop_requested").exists()
    assert result.values("run")[0][:2] == [launched.run_id, "stopped"]
    assert remote.status(launched.run_id)[1] == "stopped"


def test_child_that_left_the_session_is_found_by_its_marker(remote: Remote) -> None:
    launched = remote.launch(ESCAPING_CHILD)
    wait_for(lambda: (launched.run_dir / "escaped").exists(), what="child in its own session")
    pids = run_processes(launched, 3)
    escaped = [pid for pid in pids if os.getsid(pid) == pid and pid != launched.pid]
    assert len(escaped) == 1

    result = remote.stop(launched)

    assert result.value("outcome") == "stopped"
    assert escaped[0] in {int(pid) for pid in result.value("killed").split()}
    assert not any(alive(pid) for pid in pids)


def test_survivor_is_named_then_force_kills_it(remote: Remote) -> None:
    launched = remote.launch(STUBBORN_CHILD)
    wait_for(lambda: (launched.run_dir / "stubborn").exists(), what="child ignoring SIGTERM")
    pids = run_processes(launched, 3)

    polite = remote.stop(launched, grace="1", force="0")

    assert polite.returncode == 6, polite
    assert polite.value("outcome") == "survived"
    survivors = [int(pid) for pid in polite.value("survivors").split()]
    assert survivors and all(alive(pid) for pid in survivors)
    assert all(str(pid) in polite.stderr for pid in survivors)
    assert "python" in polite.stderr

    forced = remote.stop(launched, grace="0", force="1")

    assert forced.returncode == 0, forced
    assert forced.value("outcome") == "stopped"
    assert not any(alive(pid) for pid in pids)
    assert marked_pids(launched.run_id) == []


def test_nothing_to_stop(remote: Remote) -> None:
    launched = remote.launch("pass")
    wait_file(launched.run_dir / ".rtrain" / "status")

    result = remote.stop(launched)

    assert result.returncode == 0
    assert result.value("outcome") == "not_running"
    # The run's state comes with the answer, worded as status.sh words it.
    assert result.values("run") == [remote.status(launched.run_id)]
    assert result.values("run")[0][1] == "completed"
    assert not (launched.run_dir / ".rtrain" / "stop_requested").exists()


def test_foreign_pid_in_the_pid_file_is_refused_and_spared(
    remote: Remote, bystander: Callable[[], subprocess.Popen[bytes]]
) -> None:
    run_id, run_dir = remote.prepare()
    stranger = bystander()
    # A run dir with no .rtrain/ is an older rtrain's: its pid file is read where it was.
    (run_dir / "train.pid").write_text(f"{stranger.pid}\n")

    result = remote.run("stop", str(run_dir), run_id, "1", "1")

    assert result.returncode == 5, result
    assert result.value("outcome") == "refused"
    assert result.value("reason") != ""
    assert stranger.poll() is None, "a process outside the run is never signalled"
    assert not (run_dir / "stop_requested").exists()


def test_pid_file_naming_init_or_the_caller_is_refused(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    # The caller of the script (this test process) is one of the script's ancestors.
    for pid in ("1", "0", str(os.getpid())):
        (run_dir / "train.pid").write_text(pid + "\n")

        result = remote.run("stop", str(run_dir), run_id, "1", "1")

        assert result.returncode == 5, (pid, result)
        assert result.value("outcome") == "refused"


def test_grace_period_lets_the_trainer_finish_cleanly(remote: Remote) -> None:
    trainer = """
import signal, sys, time
def finish(signum, frame):
    open("cleaned-up", "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, finish)
open("ready", "w").close()
time.sleep(120)
"""
    launched = remote.launch(trainer)
    wait_for(lambda: (launched.run_dir / "ready").exists(), what="trainer ready")

    result = remote.stop(launched, grace="5")

    assert result.value("outcome") == "stopped"
    assert (launched.run_dir / "cleaned-up").exists()
    assert wait_file(launched.run_dir / ".rtrain" / "status") == "0\n"
    assert remote.status(launched.run_id)[1] == "stopped"


def test_caller_carrying_the_marker_is_spared(remote: Remote) -> None:
    # A trainer may run rtrain itself; the scripts it starts inherit the run's marker and must
    # neither count themselves as the run nor kill themselves or their parents.
    launched = remote.launch("import time; time.sleep(120)")
    pids = run_processes(launched, 2)
    marked_env = {**remote.env, "RTRAIN_RUN_ID": launched.run_id}

    def state() -> str:
        return remote.run("status", "~/.rtrain", launched.run_id, env=marked_env).values("run")[0][
            1
        ]

    assert state() == "running"
    result = remote.run("stop", str(launched.run_dir), launched.run_id, "1", "0", env=marked_env)

    assert result.returncode == 0, result
    assert result.value("outcome") == "stopped"
    assert {int(pid) for pid in result.value("killed").split()} == set(pids)
    assert not any(alive(pid) for pid in pids)
    assert state() == "stopped"


# On SIGTERM the trainer hands its checkpoint to a process of its own and exits: the writer
# appears after the signal, takes a while, and must be left to finish.
CHECKPOINT_HANDOFF = """
import signal, subprocess, sys, time
WRITER = (
    "import os, time; open('ckpt.part', 'w').write('half'); time.sleep({seconds}); "
    "open('ckpt.part', 'w').write('whole'); os.rename('ckpt.part', 'ckpt')"
)
def hand_off(signum, frame):
    subprocess.Popen([sys.executable, "-c", WRITER])
    sys.exit(143)
signal.signal(signal.SIGTERM, hand_off)
open("ready", "w").close()
time.sleep(120)
"""


def test_a_process_started_during_the_grace_is_left_to_finish(remote: Remote) -> None:
    launched = remote.launch(CHECKPOINT_HANDOFF.replace("{seconds}", "1.5"))
    wait_for(lambda: (launched.run_dir / "ready").exists(), what="trainer ready")

    result = remote.stop(launched, grace="30")

    assert result.value("outcome") == "stopped", result
    assert (launched.run_dir / "ckpt").read_text() == "whole"
    assert not (launched.run_dir / "ckpt.part").exists()
    assert marked_pids(launched.run_id) == []


def test_a_newcomer_outliving_the_grace_is_a_survivor_until_force_kills_it(
    remote: Remote,
) -> None:
    launched = remote.launch(CHECKPOINT_HANDOFF.replace("{seconds}", "120"))
    wait_for(lambda: (launched.run_dir / "ready").exists(), what="trainer ready")

    polite = remote.stop(launched, grace="1", force="0")

    assert polite.returncode == 6 and polite.value("outcome") == "survived", polite
    [writer] = [int(pid) for pid in polite.value("survivors").split()]
    assert alive(writer) and (launched.run_dir / "ckpt.part").exists()

    forced = remote.stop(launched, grace="0", force="1")

    assert forced.value("outcome") == "stopped", forced
    assert not alive(writer) and marked_pids(launched.run_id) == []
