"""`rtrain preflight`: the verdict a user reads, its exit status, and its --json form."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import uuid
from pathlib import Path

from rtrain.protocol.schema import protocol_schema
from tests.cli.conftest import Cli
from tests.hosts import NOGPU_USER
from tests.hosts.pythons_host import PythonsHost
from tests.torch_python import far_torch_python


def test_ready_host_says_so_and_exits_0(cli: Cli) -> None:
    done = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir)
    assert done.code == 0, done
    assert done.out_lines[0].startswith("plain is ready to train"), done
    findings = [line.strip() for line in done.out_lines[1:]]
    assert findings[0] == "transport: plain over exec"
    assert "driver: NVIDIA driver 550.54.15, CUDA 12.4 at most" in findings
    gpus = [line for line in findings if line.startswith("gpu: ")]
    assert gpus == [
        *(f"gpu: GPU {i}: NVIDIA H100 80GB HBM3, 0 of 81559 MiB used, 0% busy" for i in (0, 1)),
        "gpu: 2 of 2 free now",
    ]
    assert any(line.startswith("workdir: ") and line.endswith(" free") for line in findings)

    as_json = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "--json")
    assert as_json.code == 0, as_json
    verdict = as_json.json()
    assert verdict["ok"] is True
    assert verdict["reasons"] == []
    assert verdict["transport"] == "exec"
    assert [gpu["index"] for gpu in verdict["gpus"]] == [0, 1]
    assert verdict["gpusFree"] == 2
    assert verdict["driver"] == {"version": "550.54.15", "cudaVersion": "12.4"}

    # The same findings; the disk's free space may move between the two looks (other writers).
    def steady(text: str) -> str:
        return re.sub(r"[\d.]+ [KMGT]?B free$", "N free", text)

    assert [steady(f["text"]) for f in verdict["findings"]] == [
        steady(line.split(": ", 1)[1]) for line in findings
    ]


def test_the_verdict_line_names_a_python_without_torch(cli: Cli, notorch_host: str) -> None:
    # plain's python3 has no torch, the suite's venv under /opt has: the line says which.
    venv = far_torch_python()
    done = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir)
    assert done.code == 0, done
    verdict = done.out_lines[0]
    assert verdict.startswith("plain is ready to train, but python3 has no torch; "), verdict
    assert verdict.endswith(f" — use --python {venv}."), verdict
    assert f"  ! torch: {verdict.split(', but ', 1)[1].removesuffix('.')}" in done.out_lines

    # For a GPU run, that venv's CPU-only torch is said at once, not offered.
    done = cli("preflight", "plain", "--workdir", cli.workdir)
    assert done.code == 0, done
    verdict = done.out_lines[0]
    assert verdict.startswith(f"plain is ready to train, but python3 has no torch; {venv} "), (
        verdict
    )
    assert verdict.endswith(
        "(a CPU-only build), which cannot use this host's 2 GPUs: install a torch built for "
        "CUDA 12.4 or older."
    ), verdict
    assert "use --python" not in done.out

    # A GPU host where no python has torch at all.
    done = cli("preflight", notorch_host)
    assert done.code == 0, done
    assert done.out_lines[0].startswith(
        f"{notorch_host} is ready to train, but no python on the host has torch (looked at "
    ), done

    # A CPU run on it needs no torch: nothing to add.
    assert cli("preflight", notorch_host, "--gpus", "0").out_lines[0] == (
        f"{notorch_host} is ready to train."
    )


def test_requirements_from_a_file_name_what_to_install(
    cli: Cli, pythons_host: PythonsHost, tmp_path: Path
) -> None:
    python = pythons_host.train_python
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "# what the trainer needs\n"
        "torch>=2.0  # the suite's CPU build\n"
        "--extra-index-url https://download.pytorch.org/whl/cpu\n"
        "peft\\\n"
        ">=0.1\n"
    )
    done = cli(
        "preflight",
        "pythons",
        "--gpus",
        "0",
        "--python",
        python,
        "--require-file",
        str(requirements),
        "--require",
        "numpy>=999",
    )
    assert done.code == 1, done
    assert done.out_lines[0] == "✗ pythons cannot train"
    problems = [line.strip() for line in done.out_lines if line.strip().startswith("✗ packages")]
    assert len(problems) == 2, done.out
    assert problems[0].startswith("✗ packages: numpy ")
    assert problems[0].endswith(f"fix: {python} -m pip install 'numpy>=999'")
    assert problems[1] == (
        f"✗ packages: peft is not installed in {python}; fix: {python} -m pip install 'peft>=0.1'"
    )
    assert f"· packages: to install them all: {python} -m pip install 'numpy>=999' 'peft>=0.1'" in [
        line.strip() for line in done.out_lines
    ]

    as_json = cli(
        "preflight",
        "pythons",
        "--gpus",
        "0",
        "--python",
        python,
        "--require-file",
        str(requirements),
        "--json",
    )
    packages = {p["requirement"]: p for p in as_json.json()["packages"]}
    assert packages["torch>=2.0"]["ok"] is True
    assert packages["peft>=0.1"] == {
        "requirement": "peft>=0.1",
        "name": "peft",
        "ok": False,
        "problem": f"peft is not installed in {python}",
        "fix": f"{python} -m pip install 'peft>=0.1'",
    }


def test_bad_requirements_are_refused_before_anything_runs(cli: Cli, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch\nnot a requirement!\n")
    done = cli("preflight", "plain", "--require-file", str(requirements))
    assert done.code == 2, done
    assert done.err.startswith(f"rtrain: {requirements} line 2: requirement 'not a requirement!'")
    assert "daemon" not in done.err

    done = cli("preflight", "plain", "--require", "torch >= = 2")
    assert done.code == 2 and "is not one pip understands" in done.err, done

    done = cli("preflight", "plain", "--hf-model", "not a model")
    assert done.code == 2 and "is not a model id" in done.err, done


def test_a_gated_model_says_what_to_do_and_the_token_goes_as_a_secret(
    cli: Cli, pythons_host: PythonsHost
) -> None:
    # No Hub answers on this port: the host cannot reach it, and says so.
    alias = pythons_host.alias(
        f"nohub-{uuid.uuid4().hex[:6]}",
        {"HF_ENDPOINT": f"http://127.0.0.1:{cli.hosts.closed_port}"},
    )
    cli.env["HF_TOKEN"] = "hf_" + uuid.uuid4().hex
    done = cli(
        "preflight",
        alias,
        "--gpus",
        "0",
        "--python",
        pythons_host.train_python,
        "--hf-model",
        "meta-llama/Llama-3.1-8B",
        "--secret",
        "HF_TOKEN",
    )
    assert done.code == 1, done
    [line] = [line for line in done.out_lines if "hugging face" in line]
    assert line.strip().startswith(
        "✗ hugging face: the host cannot reach the Hub at http://127.0.0.1:"
    )
    assert cli.env["HF_TOKEN"] not in done.out + done.err


def test_host_without_gpus_cannot_train(cli: Cli) -> None:
    done = cli("preflight", "nogpu")
    assert done.code == 1, done
    assert done.out_lines[0] == "✗ nogpu cannot train"
    reasons = done.out_lines[1:]
    assert reasons and all(line.startswith("  ") for line in reasons), done
    assert any("GPU" in line for line in reasons), done

    as_json = cli("preflight", "nogpu", "--json")
    assert as_json.code == 1, as_json
    verdict = as_json.json()
    assert verdict["ok"] is False
    assert any("GPU" in reason for reason in verdict["reasons"])


def test_unreachable_host_is_not_ready(cli: Cli) -> None:
    done = cli("preflight", "closed")
    assert done.code == 1, done
    assert done.out_lines[0] == "✗ closed cannot train"
    assert "host unreachable" in done.out, done


def test_password_only_host_fails_fast_without_a_prompt(cli: Cli) -> None:
    # stdin is /dev/null and there is no tty: a prompt would hang until the timeout.
    done = cli("preflight", "passonly", "--json")
    assert done.code == 10, done
    error = json.loads(done.err)["error"]
    assert error["kind"] == "login_required", done
    assert "`rtrain login passonly`" in error["message"], done
    assert "password:" not in done.err.lower()


def test_an_unknown_alias_says_which_ssh_config_hides_it(cli: Cli) -> None:
    done = cli("preflight", "nosuch-alias", "--json")
    assert done.code == 1, done
    (reason,) = done.json()["reasons"]
    config = cli.env["RTRAIN_SSH_CONFIG"]
    assert reason.startswith("host unreachable: nosuch-alias: ssh: Could not resolve"), reason
    assert f"rtrain reads the ssh config {config} (RTRAIN_SSH_CONFIG" in reason, reason
    assert "~/.ssh/config" in reason and f"add `Host nosuch-alias` to {config}" in reason


def test_json_leaves_out_empty_defaults_but_keeps_required_lists(cli: Cli) -> None:
    # As docs/cli.md says: `reasons` has no default and is always there, `gpus` is left
    # out when empty.
    ready = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "--json").json()
    assert ready["reasons"] == []
    nogpu = cli("preflight", "nogpu", "--json").json()
    assert "gpus" not in nogpu and nogpu["reasons"], nogpu
    preflight = protocol_schema()["$defs"]["PreflightResult"]
    assert "reasons" in preflight["required"] and "gpus" not in preflight["required"]


def test_a_python_of_another_account_is_never_offered(cli: Cli) -> None:
    """A venv with torch under /opt that another account owns (it can change or remove it
    under the run): listed as another account's, never suggested; the suite's own venv
    (root's) is offered instead. Its name sorts before the suite's, so it would be first."""
    own = Path(far_torch_python()).parent.parent
    other = Path(f"/opt/rtrain-a-{cli.tag}")
    account = pwd.getpwnam(NOGPU_USER)
    try:
        (other / "bin").mkdir(parents=True)
        shutil.copy(own / "pyvenv.cfg", other / "pyvenv.cfg")
        (other / "lib").symlink_to(own / "lib")
        (other / "bin" / "python").symlink_to(os.path.realpath(own / "bin" / "python"))
        for path in (
            other,
            other / "bin",
            other / "pyvenv.cfg",
            other / "lib",
            other / "bin" / "python",
        ):
            os.lchown(path, account.pw_uid, account.pw_gid)
        done = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "--json")
        assert done.code == 0, done
        verdict = done.json()
        listed = {c["path"]: c for c in verdict["pythonCandidates"]}
        foreign = listed[str(other / "bin" / "python")]
        assert not foreign["usable"] and "another account" in foreign["error"], foreign
        assert verdict["suggestedPython"] == far_torch_python(), verdict
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_run_failing_for_want_of_torch_is_pointed_to_a_python_that_has_it(cli: Cli) -> None:
    # plain's python3 has no torch; the suite's venv under /opt has.
    run_id = cli.new_run_id("notorch")
    cli.start(run_id, "{python}", "-c", "import torch")
    cli.wait_state(
        "plain",
        run_id,
        "failed (exit 1, ModuleNotFoundError: No module named 'torch'; python3 has no torch: "
        "`rtrain preflight plain` names a python that has it)",
    )
    # Once preflight has looked, the reason names the python it found torch in.
    assert cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir).code == 0
    venv = far_torch_python()
    again = cli.new_run_id("notorch")
    cli.start(again, "{python}", "-c", "import torch.nn")
    cli.wait_state(
        "plain",
        again,
        "failed (exit 1, ModuleNotFoundError: No module named 'torch'; python3 has no torch: "
        f"preflight found torch in {venv} (start with --python {venv}))",
    )
