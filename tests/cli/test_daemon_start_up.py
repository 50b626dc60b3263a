"""What the daemon takes from the command that starts it, and what a client says when the
daemon cannot serve as it should: a damaged registry, a daemon that dies at start-up, a
daemon that reads other settings than this shell."""

from __future__ import annotations

import json
import sqlite3
import stat

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import run_rtrain

PRINT_TOKEN = "import os; print('token:', os.environ.get('HF_TOKEN'), flush=True)"


def test_a_registry_of_garbage_is_moved_aside_and_said_once(cli: Cli) -> None:
    registry = cli.daemon.state / "rtrain" / "registry.sqlite3"
    registry.parent.mkdir(mode=0o700)
    registry.write_bytes(b"this is not a database\n" * 100)

    first = cli("status", "local", "no-such-run")
    # The daemon came up and answered the question asked (no such run, exit 1)...
    assert first.code == 1, first
    assert first.err_lines[-1].startswith("rtrain: "), first
    assert "did not start" not in first.err
    (notice,) = [line for line in first.err_lines if "registry" in line]
    (aside,) = registry.parent.glob("registry.sqlite3.damaged-*")
    # ...kept the damaged file, said where it went, and started afresh.
    assert aside.read_bytes() == b"this is not a database\n" * 100
    assert str(aside) in notice and "rtrain status HOST RUN" in notice, notice
    assert sqlite3.connect(registry).execute("PRAGMA quick_check").fetchone() == ("ok",)
    assert str(aside) in cli.daemon.log.read_text()

    second = cli("runs")
    assert "registry" not in second.err, second
    status = cli("daemon", "status")
    assert status.code == 0 and str(aside) in status.out, status
    assert json.loads(cli("daemon", "status", "--json").out)["notices"] == [
        notice.removeprefix("rtrain: ")
    ]


def test_a_registry_cut_short_is_replaced_and_its_runs_found_again(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('hi')")
    cli.wait_state("plain", run_id, "completed")
    assert cli("daemon", "stop").code == 0
    registry = cli.daemon.state / "rtrain" / "registry.sqlite3"
    db = sqlite3.connect(registry)
    # Enough rows for the file to span many pages, so half of it lacks some.
    db.executemany(
        "INSERT INTO runs (host, run_id, state) VALUES (?, ?, 'completed')",
        [("plain", f"filler-{n}-{'x' * 200}") for n in range(300)],
    )
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    size = registry.stat().st_size
    with open(registry, "r+b") as f:
        f.truncate(size // 2)

    done = cli("status", "plain", run_id, "--workdir", cli.workdir)
    assert (done.code, done.out) == (0, "completed\n"), done
    assert any("registry could not be read" in line for line in done.err_lines), done
    assert list(registry.parent.glob("registry.sqlite3.damaged-*"))


def test_a_daemon_that_dies_starting_is_quoted_not_timed_out(cli: Cli) -> None:
    state = cli.daemon.state / "rtrain"
    state.mkdir(mode=0o700)
    state.chmod(0o755)  # the daemon refuses a state directory others may enter
    done = cli("runs")
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert sentence.startswith("rtrain: The rtrain daemon stopped while starting: "), done
    assert f"chmod 700 {state}" in sentence and str(cli.daemon.log) in sentence, done
    assert "within" not in sentence
    assert stat.S_IMODE(state.stat().st_mode) == 0o755


def test_a_secret_reaches_only_the_run_it_was_given_to(cli: Cli) -> None:
    secret_env = {**cli.env, "HF_TOKEN": "hf_only_for_the_first"}
    cli.file("cfg.yaml", "epochs: 1\n")
    common = ["-c", "cfg.yaml", "--workdir", str(cli.local_workdir), "--gpus", "0"]
    first_id, second_id = cli.new_run_id(), cli.new_run_id()
    # The first command starts the daemon, from a shell that has the secret.
    first = run_rtrain(
        ["start", "local", *common, "--run-id", first_id, "--secret", "HF_TOKEN",
         "--", "{python}", "-c", PRINT_TOKEN],
        env=secret_env, cwd=cli.cwd,
    )  # fmt: skip
    assert first.code == 0 and "token: hf_only_for_the_first" in first.out_lines, first
    (pid,) = cli.daemon.daemon_pids()
    with open(f"/proc/{pid}/environ", "rb") as f:
        environ = f.read()
    assert b"hf_only_for_the_first" not in environ
    assert b"XDG_RUNTIME_DIR=" in environ and b"PATH=" in environ

    second = cli("start", "local", *common, "--run-id", second_id, "--", "{python}", "-c",
                 PRINT_TOKEN)  # fmt: skip
    assert second.code == 0 and "token: None" in second.out_lines, second


def test_a_daemon_with_other_settings_says_so_and_how_to_fix_it(cli: Cli) -> None:
    assert cli("daemon", "start").code == 0
    other = cli.file("other_ssh_config", "Host elsewhere\n  HostName 127.0.0.1\n")
    env = {**cli.env, "RTRAIN_SSH_CONFIG": str(other)}
    done = run_rtrain(["runs"], env=env, cwd=cli.cwd)
    assert done.code == 0, done
    (sentence,) = [line for line in done.err_lines if "daemon" in line]
    assert sentence == (
        f"rtrain: the running daemon was started with RTRAIN_SSH_CONFIG="
        f"{cli.env['RTRAIN_SSH_CONFIG']}, unlike this shell (RTRAIN_SSH_CONFIG={other}); run "
        "`rtrain daemon stop` and the next command starts one with this shell's settings "
        "(runs on hosts are not affected)."
    ), done
    # The start-up fast path (status without typer, a warm daemon) says it too.
    quick = run_rtrain(["status", "plain", "nosuch"], env=env, cwd=cli.cwd)
    assert sentence in quick.err_lines, quick
    # The same shell as the daemon's hears nothing.
    assert "daemon" not in cli("runs").err


def test_a_bad_config_file_is_said_once_with_its_file_and_line(cli: Cli) -> None:
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        'poll_interval = 1\n\n[hosts.gpubox]\npython = "python3"\ntransport = "ftp"\n'
    )
    first = cli("runs")
    assert first.code == 0, first
    (notice,) = [line for line in first.err_lines if "config" in line]
    assert notice == (
        f"rtrain: The user config was ignored: {config}, line 5: hosts.gpubox.transport: "
        "Invalid enum value 'ftp'. Fix it, then run `rtrain daemon stop` so the next "
        "command starts a daemon that reads it."
    ), first
    assert "config" not in cli("runs").err
    assert f"{config}, line 5" in cli("daemon", "status").out


def test_a_config_file_that_is_not_toml_says_where(cli: Cli) -> None:
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir()
    config.write_text("poll_interval = 1\nssh_config = \n")
    done = cli("runs")
    (notice,) = [line for line in done.err_lines if "config" in line]
    assert f"{config} is not valid TOML: Invalid value (at line 2, column 14)" in notice, done
