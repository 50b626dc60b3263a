"""launch.sh: a detached run in its own session that the caller can walk away from."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import uuid
from pathlib import Path

from rtrain.daemon.remote.contract.launch_scripts import ahead_stdin
from tests.operations.processes import marked_pids
from tests.run_mark import entries

from .conftest import (
    PYTHON,
    Launched,
    Remote,
    alive,
    all_cmdlines,
    assert_run_ends,
    wait_file,
    wait_for,
)

# Writes what the trainer sees about itself to facts.json, then runs for a long while.
FACTS_THEN_SLEEP = """
import hashlib, json, os, sys, time
facts = {
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "sid": os.getsid(0),
    "cwd": os.getcwd(),
    "stdin": os.readlink("/proc/self/fd/0"),
    "stdout": os.readlink("/proc/self/fd/1"),
    "run_id": os.environ.get("RTRAIN_RUN_ID"),
    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
    "token_sha": hashlib.sha256(os.environ.get("API_TOKEN", "").encode()).hexdigest(),
    "argv": sys.argv[1:],
}
with open("facts.tmp", "w") as out:
    json.dump(facts, out)
os.rename("facts.tmp", "facts.json")
print("trainer says hello")
time.sleep(120)
"""


def secret_line(name: str, value: str) -> bytes:
    return name.encode() + b"\t" + base64.b64encode(value.encode()) + b"\n"


def test_returns_at_once_with_the_session_leader(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    # capture_output: were any descriptor of the run still tied to our pipes, this would
    # block until the trainer's two minutes were up and hit the timeout instead.
    result = remote.run(
        "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", FACTS_THEN_SLEEP, timeout=20
    )

    assert result.returncode == 0, result
    leader = int(result.value("pid"))
    meta = json.loads((run_dir / "meta.json").read_text())
    assert int(result.value("started_at")) == meta["started_at"]
    assert os.getsid(leader) == leader, "the pid names its own session's leader"
    assert os.getpgid(leader) == leader
    assert (run_dir / ".rtrain" / "train.pid").read_text().strip() == str(leader)

    facts = json.loads(wait_file(run_dir / "facts.json"))
    assert facts["ppid"] == leader, "the trainer is the leader's child"
    assert facts["sid"] == leader
    assert facts["cwd"] == str(run_dir)
    assert facts["stdin"] == "/dev/null"
    assert facts["stdout"] == str(run_dir / "train.log")
    assert facts["run_id"] == run_id
    assert facts["unbuffered"] == "1"
    wait_for(lambda: b"trainer says hello" in (run_dir / "train.log").read_bytes(), what="log")
    assert alive(leader) and alive(facts["pid"])


def test_the_session_leader_reads_short_in_ps_and_keeps_the_marker(remote: Remote) -> None:
    launched = remote.launch(FACTS_THEN_SLEEP)
    wait_file(launched.run_dir / "facts.json")
    argv = Path(f"/proc/{launched.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    # `ps` shows `/bin/sh ./rtrain-run RUN_ID ...` and the trainer's argv, nothing longer.
    assert argv[1:3] == [b"./rtrain-run", launched.run_id.encode()], argv
    assert len(b" ".join(argv)) < len(FACTS_THEN_SLEEP) + 200, argv
    environ = Path(f"/proc/{launched.pid}/environ").read_bytes().split(b"\0")
    assert f"RTRAIN_RUN_ID={launched.run_id}".encode() in environ


def test_secret_reaches_the_trainer_and_nothing_else(remote: Remote) -> None:
    token = f"s3cr3t-{uuid.uuid4().hex}\t$(touch pwned) 'quoted' \"double\"\nsecond line\n"
    secrets = secret_line("API_TOKEN", token) + secret_line("OTHER_KEY", "x")

    launched = remote.launch(FACTS_THEN_SLEEP, secrets=secrets)

    facts = json.loads(wait_file(launched.run_dir / "facts.json"))
    assert facts["token_sha"] == hashlib.sha256(token.encode()).hexdigest()
    distinctive = token.split("\t")[0].encode()
    assert not any(distinctive in cmdline for cmdline in all_cmdlines())
    encoded = base64.b64encode(token.encode())
    for path in launched.run_dir.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert distinctive not in content and encoded not in content, path
    assert not (launched.run_dir / "pwned").exists()
    assert not (remote.home / "pwned").exists()


def test_bad_secret_lines_launch_nothing(remote: Remote) -> None:
    bad_lines = [b"1BAD\tYWJj\n", b"NO_TAB\n", b"GOOD\tnot base64 !!\n", b"RTRAIN_X\tYWJj\n"]
    for secrets in bad_lines:
        run_id, run_dir = remote.prepare()
        result = remote.run(
            "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", "pass", stdin=secrets
        )

        assert result.returncode == 10, (secrets, result)
        assert result.values("error")[0][0] == "bad_secret"
        assert entries(run_dir) == []


def test_meta_records_the_command_exactly(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    awkward = ['quote " back \\ slash', "tab\there", "new\nline", "ünïcødé ✓", "\x01\x1f", "", "-v"]
    command = [PYTHON, "-c", "import sys, time; time.sleep(0)", *awkward]

    result = remote.run("launch", str(run_dir), run_id, PYTHON, *command)

    assert result.returncode == 0, result
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["command"] == command
    assert meta["run_id"] == run_id
    assert meta["started_at"] == int(result.value("started_at"))
    assert meta["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert meta["hostname"] == socket.gethostname()


def test_instant_failure_still_reports_a_pid(remote: Remote) -> None:
    launched = remote.launch("raise SystemExit(3)")

    assert launched.pid > 1
    assert wait_file(launched.run_dir / ".rtrain" / "status") == "3\n"


def test_missing_trainer_program_fails_with_127(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    result = remote.run("launch", str(run_dir), run_id, PYTHON, "no-such-trainer-binary")

    assert result.returncode == 0, result
    assert wait_file(run_dir / ".rtrain" / "status") == "127\n"


def test_second_launch_of_a_run_is_refused(remote: Remote) -> None:
    launched = remote.launch("import time; time.sleep(120)")

    again = remote.run(
        "launch", str(launched.run_dir), launched.run_id, PYTHON, PYTHON, "-c", "pass"
    )

    assert again.returncode == 15
    assert again.lines == [["error", "already_launched"]]
    assert (launched.run_dir / ".rtrain" / "train.pid").read_text().strip() == str(launched.pid)


def test_leader_passes_signals_on_and_records_how_the_trainer_ended(remote: Remote) -> None:
    # SIGINT matters most: a shell without job control starts background jobs with it
    # ignored, and Python's KeyboardInterrupt must still work.
    for sent, expected in ((signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        launched = remote.launch("import time; open('ready', 'w').close(); time.sleep(120)")
        wait_file(launched.run_dir / "ready", empty_ok=True)

        os.kill(launched.pid, sent)

        assert wait_file(launched.run_dir / ".rtrain" / "status") == f"{expected}\n", sent
        assert_run_ends(launched.run_id)


def test_trainer_gets_the_callers_umask_while_run_files_stay_private(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    code = "import os; mask = os.umask(0); open('umask', 'w').write(oct(mask))"

    def caller_umask() -> None:
        os.umask(0o022)

    result = remote.run(
        "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", code, preexec=caller_umask
    )

    assert result.returncode == 0, result
    wait_file(run_dir / ".rtrain" / "status")
    assert (run_dir / "umask").read_text() == "0o22"
    for name in ("train.log", "meta.json", ".rtrain", ".rtrain/train.pid", ".rtrain/status"):
        assert (run_dir / name).stat().st_mode & 0o077 == 0, name


def test_a_launch_opened_ahead_runs_on_its_go(remote: Remote) -> None:
    """launch.sh --ahead waits on stdin for its arguments and the launch input; with the go
    at their end it launches as launch.sh with arguments does."""
    run_id, run_dir = remote.prepare()
    argv = [str(run_dir), run_id, PYTHON, PYTHON, "-c", FACTS_THEN_SLEEP, "an arg\nwith a line"]
    given = ahead_stdin(argv, secret_line("API_TOKEN", "s3cret"))
    result = remote.run("launch", "--ahead", run_id, stdin=given, timeout=20)

    assert result.returncode == 0, result
    leader = int(result.value("pid"))
    facts = json.loads(wait_file(run_dir / "facts.json"))
    assert facts["ppid"] == leader
    assert facts["argv"] == ["an arg\nwith a line"]
    assert facts["token_sha"] == hashlib.sha256(b"s3cret").hexdigest()
    stopped = remote.stop(Launched(run_id, run_dir, leader, 0), force="1")
    assert stopped.returncode == 0, stopped
    assert_run_ends(run_id)


def test_a_launch_opened_ahead_without_its_go_launches_nothing(remote: Remote) -> None:
    """A start that failed while shipping, or a daemon that died, ends the input before the
    go (anywhere in it): the script says `stood_down` and touches nothing."""
    run_id, run_dir = remote.prepare()
    whole = ahead_stdin(
        [str(run_dir), run_id, PYTHON, PYTHON, "-c", FACTS_THEN_SLEEP],
        secret_line("API_TOKEN", "s3cret") + b"+meta\tgpus\tMA==\n",
    )
    assert whole.endswith(b"+go\n")
    for cut in (0, 5, whole.index(b"\n") + 1, len(whole) // 2, len(whole) - len(b"+go\n")):
        result = remote.run("launch", "--ahead", run_id, stdin=whole[:cut], timeout=20)
        assert result.returncode == 0, (cut, result)
        assert result.lines == [["stood_down"]], (cut, result)
        assert not (run_dir / "meta.json").exists() and not (run_dir / ".rtrain").exists()
        assert marked_pids(lambda marker: marker == run_id) == []


def test_a_launch_opened_ahead_refuses_another_runs_go(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    other, _ = remote.prepare()
    given = ahead_stdin([str(run_dir), run_id, PYTHON, PYTHON, "-c", "print(1)"], b"")
    result = remote.run("launch", "--ahead", other, stdin=given, timeout=20)
    assert result.returncode == 2, result
    assert not (run_dir / "meta.json").exists()


def test_a_long_meta_value_after_the_go_is_written_and_a_cut_one_launches_nothing(
    remote: Remote,
) -> None:
    """A code tree's inputs (a long `+meta` value) come after the go, ended by `+end`: they
    land in meta.json whole; cut anywhere before `+end`, nothing is launched."""
    inputs = {f"pkg/m{n:04d}.py": hashlib.sha256(str(n).encode()).hexdigest() for n in range(300)}
    run_id, run_dir = remote.prepare()
    argv = [str(run_dir), run_id, PYTHON, PYTHON, "-c", "print('trained')"]
    value = base64.b64encode(json.dumps(inputs).encode()).decode()
    whole = ahead_stdin(argv, f"+meta\tgpus\tMA==\n+meta\tinputs\t{value}\n".encode())
    go = whole.index(b"+go\n") + len(b"+go\n")
    assert whole.endswith(b"+end\n") and b"inputs" in whole[go:]
    for cut in (go + 3, len(whole) - len(b"+end\n"), len(whole) - 2):
        result = remote.run("launch", "--ahead", run_id, stdin=whole[:cut], timeout=20)
        assert result.lines == [["stood_down"]], (cut, result)
        assert not (run_dir / "meta.json").exists()
    result = remote.run("launch", "--ahead", run_id, stdin=whole, timeout=20)
    assert result.returncode == 0, result
    meta = json.loads((run_dir / ".rtrain" / "meta.json").read_text())
    assert meta["inputs"] == inputs and meta["gpus"] == 0
    assert_run_ends(run_id)
