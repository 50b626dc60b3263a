"""status.sh: what became of a run, decided from the far side's own records and processes."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from .conftest import Launched, Remote, alive, marked_pids, wait_file, wait_for

SLEEPER = "import time; open('ready', 'w').close(); time.sleep(120)"


def trainer_pid(launched: Launched) -> int:
    """The leader's only child: the trainer."""

    def child_of_leader() -> list[int]:
        return [
            pid
            for pid in marked_pids(launched.run_id)
            if pid != launched.pid and os.getsid(pid) == launched.pid
        ]

    wait_for(lambda: len(child_of_leader()) >= 1, what="trainer")
    return min(child_of_leader())


def finished(remote: Remote, launched: Launched) -> list[str]:
    wait_file(launched.run_dir / ".rtrain" / "status")
    return remote.status(launched.run_id)


def test_completed(remote: Remote) -> None:
    launched = remote.launch("print('done')")

    state = finished(remote, launched)

    # Then: how long a running run has been still (limits.sh), when a torchrun run's first
    # rank failed, whether global rank 0 ran here; `-` for none.
    assert state == [
        launched.run_id,
        "completed",
        "0",
        "-",
        str(launched.started_at),
        "-",
        "-",
        "-",
        "-",
    ]


def test_failed_with_its_exit_code(remote: Remote) -> None:
    launched = remote.launch("raise SystemExit(3)")

    state = finished(remote, launched)

    assert state[1:4] == ["failed", "3", "-"]


def test_killed_by_a_signal(remote: Remote) -> None:
    launched = remote.launch("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")

    state = finished(remote, launched)

    assert state[1:4] == ["failed", "137", "9"]


def test_running(remote: Remote) -> None:
    launched = remote.launch(SLEEPER)

    assert remote.status(launched.run_id)[1:5] == ["running", "-", "-", str(launched.started_at)]


def test_running_while_a_child_outlives_its_leader(remote: Remote) -> None:
    launched = remote.launch(SLEEPER)
    trainer = trainer_pid(launched)

    os.kill(launched.pid, signal.SIGKILL)
    wait_for(lambda: not alive(launched.pid), what="leader gone")

    assert alive(trainer)
    assert remote.status(launched.run_id)[1] == "running"


def test_lost_when_every_process_died_without_a_status(remote: Remote) -> None:
    launched = remote.launch(SLEEPER)
    trainer = trainer_pid(launched)

    os.kill(launched.pid, signal.SIGKILL)
    os.kill(trainer, signal.SIGKILL)
    wait_for(lambda: not marked_pids(launched.run_id), what="run gone")

    state = remote.status(launched.run_id)
    assert state[1:4] == ["lost", "-", "-"]
    assert state[5] == "process gone without exit status"
    assert not (launched.run_dir / ".rtrain" / "status").exists()


def test_recycled_pid_is_not_the_run(
    remote: Remote, bystander: Callable[[], subprocess.Popen[bytes]]
) -> None:
    launched = remote.launch(SLEEPER)
    trainer = trainer_pid(launched)
    os.kill(launched.pid, signal.SIGKILL)
    os.kill(trainer, signal.SIGKILL)
    wait_for(lambda: not marked_pids(launched.run_id), what="run gone")
    stranger = bystander()
    (launched.run_dir / ".rtrain" / "train.pid").write_text(f"{stranger.pid}\n")

    assert remote.status(launched.run_id)[1] == "lost"
    assert stranger.poll() is None


def test_reboot_makes_a_run_lost(remote: Remote) -> None:
    launched = remote.launch(SLEEPER)
    meta = launched.run_dir / ".rtrain" / "meta.json"
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    meta.write_text(meta.read_text().replace(boot, "00000000-0000-0000-0000-000000000000"))

    state = remote.status(launched.run_id)

    assert state[1] == "lost"
    assert "reboot" in state[5]


def test_missing(remote: Remote) -> None:
    state = remote.status("never-created")

    assert state == ["never-created", "missing", "-", "-", "-", "no run directory", "-", "-", "-"]


def test_stop_request_turns_an_exit_into_stopped(remote: Remote) -> None:
    launched = remote.launch(SLEEPER)
    wait_for(lambda: (launched.run_dir / "ready").exists(), what="trainer ready")
    # What stop.sh does: record the request, then signal the run's process group.
    (launched.run_dir / ".rtrain" / "stop_requested").write_text("")
    os.killpg(launched.pid, signal.SIGTERM)

    state = finished(remote, launched)

    assert state[1:4] == ["stopped", "143", "15"]


def test_one_call_answers_for_many_runs_in_order(remote: Remote) -> None:
    done = remote.launch("pass")
    running = remote.launch(SLEEPER)
    wait_file(done.run_dir / ".rtrain" / "status")

    result = remote.run("status", "~/.rtrain", running.run_id, "absent", done.run_id)

    assert result.returncode == 0
    assert [(fields[0], fields[1]) for fields in result.values("run")] == [
        (running.run_id, "running"),
        ("absent", "missing"),
        (done.run_id, "completed"),
    ]
