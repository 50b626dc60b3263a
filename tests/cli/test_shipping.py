"""What `start` ships: a code directory (with its ignore rules), datasets that are files or
directories, and refusals, before any ssh, of inputs that would land on the same name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

TRAIN_PY = """\
import sys
from helpers.words import shout

config = open(sys.argv[sys.argv.index("--config") + 1]).read()
rows = open("train.jsonl").read().splitlines()
print(shout(f"trained on {len(rows)} rows with {config.strip()}"), flush=True)
"""


def make_project(root: Path) -> Path:
    """A small project as a person has one: code, a module, requirements, ignore rules,
    a git directory, and things that must not travel (checkpoints, a venv)."""
    (root / "helpers").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "helpers" / "__init__.py").write_text("")
    (root / "helpers" / "words.py").write_text("def shout(text):\n    return text.upper()\n")
    (root / "requirements.txt").write_text("numpy\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run.sh ran\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("*.ckpt\n.venv/\n")
    (root / "model.ckpt").write_text("big weights")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").write_text("not shipped")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "data").mkdir()
    (root / "data" / "train.jsonl").write_text('{"prompt": "a", "completion": "b"}\n' * 3)
    (root / "config.yaml").write_text("lr: 0.1\n")
    return root


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_readme_command_with_code_finds_train_py_and_reports_what_shipped(
    cli: Cli, host: str
) -> None:
    project = make_project(cli.cwd / "project")
    run_id = cli.new_run_id()
    workdir = str(cli.local_workdir) if host == "local" else cli.workdir
    done = cli(
        "start", host, "-c", "config.yaml", "-d", "data/train.jsonl", "--code", ".",
        "--run-id", run_id, "--workdir", workdir, "--gpus", "0", "--json",
        # Its requirements.txt ships as a file; the environment it would make otherwise is
        # tests/cli/test_environments.py's.
        "--requirements", "",
        "--", "{python}", "train.py", "--config", "{config}",
        cwd=project,
    )  # fmt: skip
    assert done.code == 0, done
    started, *logs, end = done.json_lines()
    assert end["run"]["state"] == "completed", done
    text = "".join(entry["text"] for entry in logs)
    assert text == "TRAINED ON 3 ROWS WITH LR: 0.1\n", done

    shipped = {f["path"]: f for f in started["shipped"]}
    expected = {
        "config.yaml",
        "train.jsonl",
        "train.py",
        "helpers/__init__.py",
        "helpers/words.py",
        "requirements.txt",
        "run.sh",
        ".gitignore",
        "data/train.jsonl",
    }
    assert set(shipped) == expected
    for rel, entry in shipped.items():
        local = project / ("data/train.jsonl" if rel == "train.jsonl" else rel)
        assert (entry["size"], entry["sha256"]) == (local.stat().st_size, sha256(local))
    assert started["uploadedBytes"] == sum(f.get("sentBytes", 0) for f in shipped.values())
    if host == "console":  # one PTY, no input cache: every file is sent
        assert started["uploadedBytes"] == sum(f["size"] for f in shipped.values())
    else:  # the dataset given twice (as itself and inside the code) went over the wire once
        distinct = {f["sha256"]: f["size"] for f in shipped.values()}
        assert started["uploadedBytes"] == sum(distinct.values())

    far = Path(workdir) if host == "local" else cli.far_workdir
    run_dir = far / run_id
    assert not (run_dir / ".git").exists()
    assert not (run_dir / "model.ckpt").exists()
    assert not (run_dir / ".venv").exists()
    assert (run_dir / "run.sh").stat().st_mode & 0o100, "an executable script stays one"
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["inputs"] == {rel: entry["sha256"] for rel, entry in shipped.items()}


def test_rtrainignore_wins_over_gitignore(cli: Cli) -> None:
    project = make_project(cli.cwd / "project")
    (project / ".rtrainignore").write_text("data/\nrequirements.txt\n")
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "config.yaml", "--code", ".", "--run-id", run_id,
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--json", "--", "true",
        cwd=project,
    )  # fmt: skip
    assert done.code == 0, done
    shipped = {f["path"] for f in done.json()["shipped"]}
    # .gitignore no longer applies: its *.ckpt ships; .rtrainignore's entries do not.
    assert "model.ckpt" in shipped and ".venv/bin/python" in shipped
    assert "requirements.txt" not in shipped and "data/train.jsonl" not in shipped
    assert not any(path.startswith(".git/") for path in shipped)


def test_directory_dataset_and_two_datasets_land_under_their_names(cli: Cli) -> None:
    images = cli.cwd / "images"
    (images / "train").mkdir(parents=True)
    (images / "train" / "0.txt").write_text("zero")
    (images / "labels.csv").write_text("0,cat\n")
    cli.file("extra.jsonl", "{}\n")
    cli.file("cfg.yaml", "x: 1\n")
    run_id = cli.new_run_id()
    check = (
        "import os; print(sorted(os.path.join(d, f) for d, _, fs in os.walk('images') "
        "for f in fs), os.path.exists('extra.jsonl'))"
    )
    done = cli(
        "start", "plain", "-c", "cfg.yaml",
        "-d", "images", "-d", "extra.jsonl", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--", "{python}", "-c", check,
    )  # fmt: skip
    assert done.code == 0, done
    assert "['images/labels.csv', 'images/train/0.txt'] True" in done.out_lines, done


@pytest.mark.parametrize(
    ("arrange", "args", "sentence"),
    [
        (
            lambda cwd: [(cwd / "a").mkdir(), (cwd / "b").mkdir(), (cwd / "a/d.jsonl").touch(),
                         (cwd / "b/d.jsonl").touch()],
            ["-d", "a/d.jsonl", "-d", "b/d.jsonl"],
            "the dataset 'd.jsonl' and the dataset 'd.jsonl' would both land at 'd.jsonl'",
        ),
        (
            lambda cwd: [(cwd / "code").mkdir(), (cwd / "code/train.log").touch()],
            ["--code", "code"],
            "the code directory holds 'train.log', a name rtrain uses in the run directory",
        ),
        (
            lambda cwd: [(cwd / "code").mkdir(), (cwd / "code/config.yaml").write_text("other")],
            ["--code", "code"],
            "the code directory holds 'config.yaml', a name rtrain uses in the run directory",
        ),
        (
            lambda cwd: [(cwd / "code/data").mkdir(parents=True), (cwd / "data").mkdir(),
                         (cwd / "data/x").touch()],
            ["--code", "code", "-d", "data"],
            "'data' of the code directory and the dataset 'data' would both land at 'data'",
        ),
    ],
    ids=["two-datasets", "reserved-name", "other-config", "code-and-dataset"],
)  # fmt: skip
def test_clashing_inputs_are_refused_before_any_ssh(
    cli: Cli, arrange: object, args: list[str], sentence: str
) -> None:
    arrange(cli.cwd)  # type: ignore[operator]
    cli.file("cfg.yaml", "x: 1\n")
    # `closed` refuses every connection: the sentence proves nothing tried to reach it...
    done = cli("start", "closed", "-c", "cfg.yaml", *args, "--gpus", "0", "--", "true")
    assert done.code != 0 and sentence in done.err, done
    assert "Traceback" not in done.err
    # ...and on a host that answers, no run directory is made.
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "cfg.yaml", *args, "--run-id", run_id, "--workdir",
        cli.workdir, "--gpus", "0", "--", "true",
    )  # fmt: skip
    assert done.code != 0 and sentence in done.err, done
    assert not cli.far_run_dir(run_id).exists()
    assert cli("status", "plain", run_id, "--workdir", cli.workdir).code != 0


def test_a_missing_code_directory_is_one_sentence(cli: Cli) -> None:
    cli.file("cfg.yaml", "x: 1\n")
    done = cli("start", "closed", "-c", "cfg.yaml", "--code", "nowhere", "--", "true")
    assert done.code == 2, done
    assert "nowhere" in done.err and "Traceback" not in done.err
