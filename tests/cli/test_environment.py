"""The trainer's surroundings: `--env`, `--setup`, `--python ~/...`, a program that is not
there, and the per-host defaults of config.toml."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.conftest import QUICK_DEMO_CONFIG, Cli
from tests.hosts import GPU_USER

SHOW_ENV = "import os; print('env:', os.environ.get('GREETING'), os.environ.get('EMPTY'))"


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_env_reaches_setup_and_trainer_and_is_recorded(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    workdir = str(cli.local_workdir) if host == "local" else cli.workdir
    done = cli(
        "start", host, "-c", "cfg.yaml", "--run-id", run_id, "--workdir", workdir,
        "--gpus", "0", "--env", "GREETING=hello world; $(rm -rf ~)", "--env", "EMPTY=",
        "--setup", 'echo "setup sees $GREETING"',
        "--", "{python}", "-c", SHOW_ENV,
    )  # fmt: skip
    assert done.code == 0, done
    assert "setup sees hello world; $(rm -rf ~)" in done.out_lines, done
    assert "env: hello world; $(rm -rf ~) " in done.out_lines, done
    status = cli("status", host, run_id, "--json").json()
    assert status["env"] == {"GREETING": "hello world; $(rm -rf ~)", "EMPTY": ""}
    far = Path(workdir) if host == "local" else cli.far_workdir
    meta = json.loads((far / run_id / "meta.json").read_text())
    assert meta["env"] == status["env"]
    assert meta["setup"] == 'echo "setup sees $GREETING"'


def test_demo_trainer_knob_reaches_the_host(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", QUICK_DEMO_CONFIG.replace("backend: python\n", ""))
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--env", "RTRAIN_DEMO_BACKEND=python",
    )  # fmt: skip
    assert done.code == 0, done
    assert any("backend python" in line for line in done.out_lines), done


def test_failing_setup_fails_the_run_and_the_trainer_never_starts(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--setup", "echo installing {python}; exit 3",
        "--", "{python}", "-c", "print('trainer ran')",
    )  # fmt: skip
    assert done.code == 1, done
    assert "installing python3" in done.out_lines, done
    assert "trainer ran" not in done.out
    assert "failed (setup, exit 3)" in done.err, done
    assert cli("status", "plain", run_id).out == "failed (setup, exit 3)\n"


def test_python_in_the_far_home_works_for_start(cli: Cli) -> None:
    venv = cli.far_workdir / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to("/usr/bin/python3")
    home = cli.hosts.home(GPU_USER)
    for path in (cli.far_workdir.parent, cli.far_workdir, venv.parent, venv):
        os.chown(path, home.stat().st_uid, home.stat().st_gid)
    python = f"{cli.workdir}/venv/bin/python"
    assert cli("preflight", "plain", "--gpus", "0", "--python", python).code == 0
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--python", python, "--", "{python}", "-c", "import sys; print(sys.argv)",
    )  # fmt: skip
    assert done.code == 0, done
    assert "['-c']" in done.out_lines, done


def test_a_program_not_on_the_host_is_one_sentence(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--", "no-such-trainer", "--fast",
    )  # fmt: skip
    assert done.code == 1, done
    assert done.out_lines[-1] == (
        "rtrain: cannot start the trainer: no-such-trainer is not a program on this host "
        "(not on PATH, nor an executable file)"
    ), done
    assert "wrapper" not in done.out and "/usr/bin/env" not in done.out
    assert cli("status", "plain", run_id).out == "failed (program not found, exit 127)\n"


def test_host_defaults_from_config_toml_apply_and_a_request_wins(cli: Cli) -> None:
    workdir = f"{cli.workdir}/from-config"
    (cli.daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (cli.daemon.config / "rtrain" / "config.toml").write_text(
        f"""[hosts.plain]
python = "/usr/bin/python3"
workdir = "{workdir}"
env = {{ GREETING = "from config", EMPTY = "also" }}
setup = "echo setup from config"
code = "{cli.cwd / "project"}"
"""
    )
    (cli.cwd / "project").mkdir()
    shown = f"{SHOW_ENV}\nimport sys; print(sys.executable)\n"
    (cli.cwd / "project" / "shown.py").write_text(shown)
    cli.file("cfg.yaml", "x: 1\n")
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--gpus", "0",
        "--env", "EMPTY=from request", "--", "{python}", "shown.py",
    )  # fmt: skip
    assert done.code == 0, done
    assert "setup from config" in done.out_lines, done
    assert "env: from config from request" in done.out_lines, done
    assert "/usr/bin/python3" in done.out_lines, done
    assert (cli.far_workdir / "from-config" / run_id / "shown.py").is_file()


def test_a_bad_env_key_in_config_toml_is_blamed_on_config_toml(cli: Cli) -> None:
    (cli.daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (cli.daemon.config / "rtrain" / "config.toml").write_text(
        '[hosts.plain]\nenv = { "BAD-KEY" = "x" }\n'
    )
    cli.file("cfg.yaml", "x: 1\n")
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--gpus", "0",
        "--env", "FINE=1", "--", "{python}", "-c", "print(1)",
    )  # fmt: skip
    assert done.code == 2, done
    assert done.err_lines == [
        "rtrain: config.toml [hosts.plain] env 'BAD-KEY': not an environment variable name "
        "(letters, digits and _, not starting with a digit)."
    ], done
