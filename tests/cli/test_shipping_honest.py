"""Honest shipping, against the real sshd: the start's summary says what the code's ignore
rules left home (and `--include` ships it), preflight counts what start ships, files the host
held are one line, rtrain's own files are not the user's; shipped files are the run's own to
change; links that leave the code directory ship as links, and secret-looking files are
named in a warning."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

# A nanoGPT-shaped project: its .gitignore keeps the prepared data (`*.bin`) home.
TRAIN_PY = """\
import os
data = open(os.path.join("data", "shakespeare_char", "train.bin"), "rb").read()
print(f"read {len(data)} bytes", flush=True)
"""
TRAIN_BIN = bytes(range(256)) * 40


def nanogpt_project(root: Path) -> Path:
    (root / "data" / "shakespeare_char").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "model.py").write_text("class GPT:\n    pass\n")
    (root / "config.yaml").write_text("batch_size: 12\n")
    (root / ".gitignore").write_text("*.bin\n__pycache__/\n")
    (root / "data" / "shakespeare_char" / "prepare.py").write_text("print('prepare')\n")
    (root / "data" / "shakespeare_char" / "train.bin").write_bytes(TRAIN_BIN)
    (root / "data" / "shakespeare_char" / "val.bin").write_bytes(b"v" * 100)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "model.cpython-312.pyc").write_bytes(b"p" * 50)
    return root


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def start_args(cli: Cli, run_id: str, *extra: str) -> list[str]:
    return [
        "start", "plain", "-c", "config.yaml", "--code", ".", "--run-id", run_id,
        "--workdir", cli.workdir, "--gpus", "0", *extra,
    ]  # fmt: skip


def test_the_summary_says_what_the_ignore_rules_left_home_and_include_ships_it(
    cli: Cli,
) -> None:
    project = nanogpt_project(cli.cwd / "nanogpt")
    run_id = cli.new_run_id()
    done = cli(*start_args(cli, run_id, "--", "{python}", "train.py"), cwd=project)
    # The data stayed home, as the ignore rules say; the summary says so, and why.
    assert done.code != 0 and "FileNotFoundError" in done.out, done
    left = [line for line in done.err_lines if line.startswith("left home by .gitignore")]
    assert len(left) == 1, done
    assert "3 files" in left[0], done
    assert "data/shakespeare_char/train.bin (*.bin)" in left[0], done
    assert "__pycache__/ (__pycache__/)" in left[0], done
    assert "--include PATTERN" in left[0], done

    # --include ships the ignored file; the trainer finds it.
    run_id = cli.new_run_id()
    done = cli(
        *start_args(cli, run_id, "--include", "data/shakespeare_char/train.bin", "--json"),
        "--", "{python}", "train.py", cwd=project,
    )  # fmt: skip
    assert done.code == 0, done
    started, *logs, end = done.json_lines()
    assert end["run"]["state"] == "completed", done
    assert f"read {len(TRAIN_BIN)} bytes\n" in "".join(entry["text"] for entry in logs)
    shipped = {f["path"]: f for f in started["shipped"]}
    assert "data/shakespeare_char/train.bin" in shipped
    left_home = {h["path"]: h for h in started["code"]["leftHome"]}
    assert set(left_home) == {"data/shakespeare_char/val.bin", "__pycache__/"}
    assert left_home["__pycache__/"] == {
        "path": "__pycache__/", "rule": "__pycache__/", "files": 1, "size": 50,
    }  # fmt: skip
    assert started["code"]["leftHomeFiles"] == 2

    # Preflight's "would ship" is what start shipped, to the byte.
    verdict = cli(
        "preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "-c", "config.yaml",
        "--code", ".", "--include", "data/shakespeare_char/train.bin", "--json", cwd=project,
    )  # fmt: skip
    assert verdict.code == 0, verdict
    would = verdict.json()["disk"]["shipBytes"]
    assert would == sum(f["size"] for f in shipped.values())
    inputs = [f for f in verdict.json()["findings"] if f["topic"] == "inputs"]
    assert inputs and inputs[0]["text"].startswith(f"start would ship {len(shipped)} files")


def test_files_the_host_holds_are_one_line_and_rtrains_own_files_are_not_the_users(
    cli: Cli,
) -> None:
    project = nanogpt_project(cli.cwd / "nanogpt")
    for n in range(12):
        (project / f"module_{n}.py").write_text(f"VALUE = {n}\n")
    first = cli(*start_args(cli, cli.new_run_id(), "--no-follow", "--", "true"), cwd=project)
    assert first.code == 0, first
    # With a GPU asked for, the start ships rtrain's GPU gate and its watcher too.
    run_id = cli.new_run_id()
    again = cli(
        "start", "plain", "-c", "config.yaml", "--code", ".", "--run-id", run_id,
        "--workdir", cli.workdir, "--gpus", "1", "--no-follow", "--json", "--", "true",
        cwd=project,
    )  # fmt: skip
    assert again.code == 0, again
    shipped = {f["path"] for f in again.json()["shipped"]}
    assert "gpu_gate.sh" not in shipped and not any("rtrain-" in p for p in shipped), shipped
    assert (cli.far_run_dir(run_id) / "gpu_gate.sh").exists(), "the gate itself did ship"
    count = len(shipped)

    third = cli(*start_args(cli, cli.new_run_id(), "--no-follow", "--", "true"), cwd=project)
    assert third.code == 0, third
    held = [line for line in third.err_lines if "already on plain" in line]
    assert held == [f"{count} files already on plain, 0 B sent"], third
    assert f"shipped {count} files" in third.err, third
    verbose = cli(
        *start_args(cli, cli.new_run_id(), "--no-follow", "--verbose", "--", "true"),
        cwd=project,
    )
    assert verbose.code == 0, verbose
    listed = [line.split()[0] for line in verbose.err_lines if line.startswith("  ")]
    assert sorted(listed) == sorted(shipped), verbose


def test_a_run_may_rewrite_append_to_and_delete_its_shipped_files(cli: Cli) -> None:
    project = cli.cwd / "project"
    (project / "data").mkdir(parents=True)
    originals = {
        "config.yaml": b"lr: 0.1\n",
        "prepare.py": (
            b"open('data/train.bin', 'wb').write(b'prepared')\n"
            b"open('notes.txt', 'a').write('appended\\n')\n"
        ),
        "data/train.bin": b"raw data, to be prepared\n",
        "notes.txt": b"first line\n",
        "gone.txt": b"deleted by the trainer\n",
    }
    for rel, data in originals.items():
        (project / rel).write_bytes(data)
    # A first run holds its copies of the same inputs.
    keeper = cli.new_run_id()
    done = cli(*start_args(cli, keeper, "--no-follow", "--", "true"), cwd=project)
    assert done.code == 0, done
    cli.wait_state("plain", keeper, "completed")

    # The second gets every input from the host's cache, and changes them all.
    changer = cli.new_run_id()
    trainer = (
        "import os; os.remove('gone.txt'); "
        "open('config.yaml', 'w').write('lr: 0.5\\n'); "
        "print(open('data/train.bin').read(), open('notes.txt').read().split())"
    )
    done = cli(
        *start_args(cli, changer, "--setup", "{python} prepare.py", "--json"),
        "--", "{python}", "-c", trainer, cwd=project,
    )  # fmt: skip
    assert done.code == 0, done
    started, *logs, end = done.json_lines()
    assert all(f.get("sentBytes", 0) == 0 for f in started["shipped"]), "all from the cache"
    assert end["run"]["state"] == "completed", done
    text = "".join(entry["text"] for entry in logs)
    assert "prepared ['first', 'line', 'appended']" in text, done
    changed = cli.far_run_dir(changer)
    assert not (changed / "gone.txt").exists()
    assert (changed / "config.yaml").read_bytes() == b"lr: 0.5\n"

    # Neither the cache nor the first run's copies changed.
    kept = cli.far_run_dir(keeper)
    for rel, data in originals.items():
        assert (kept / rel).read_bytes() == data, rel
    cache = cli.far_workdir / ".cache" / "inputs"
    for rel, data in originals.items():
        entry = cache / sha256(data)
        assert sha256(entry.read_bytes()) == entry.name, rel


def test_links_that_leave_the_code_directory_ship_as_links_and_secrets_are_named(
    cli: Cli,
) -> None:
    project = cli.cwd / "project"
    (project / "keys").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "config.yaml").write_text("lr: 0.1\n")
    (project / "train.py").write_text("print('hi')\n")
    (project / ".env").write_text("API_TOKEN=hunter2\n")
    (project / ".env.example").write_text("API_TOKEN=\n")
    (project / "keys" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (project / "keys" / "id_ed25519.pub").write_text("ssh-ed25519 AAAA\n")
    (project / "data" / "rows.txt").write_text("1\n2\n")
    os.symlink("/etc/passwd", project / "creds")
    os.symlink("data", project / "latest")  # a directory inside: kept as a link
    os.symlink("data/rows.txt", project / "rows.txt")  # a file inside: its content ships
    passwd = Path("/etc/passwd").read_bytes()

    run_id = cli.new_run_id()
    done = cli(*start_args(cli, run_id, "--no-follow", "--json", "--", "true"), cwd=project)
    assert done.code == 0, done
    result = done.json()
    shipped = {f["path"] for f in result["shipped"]}
    assert "creds" not in shipped and "rows.txt" in shipped
    links = {k["path"]: k for k in result["code"]["links"]}
    assert links["creds"] == {"path": "creds", "target": "/etc/passwd", "outside": True}
    assert links["latest"] == {"path": "latest", "target": "data"}
    run_dir = cli.far_run_dir(run_id)
    assert os.readlink(run_dir / "creds") == "/etc/passwd"
    assert (run_dir / "latest" / "rows.txt").read_text() == "1\n2\n"
    assert not (cli.far_workdir / ".cache" / "inputs" / sha256(passwd)).exists()
    assert sorted(result["code"]["secrets"]) == [".env", "keys/server.pem"]

    # The sentences a user reads.
    run_id = cli.new_run_id()
    done = cli(*start_args(cli, run_id, "--no-follow", "--", "true"), cwd=project)
    assert done.code == 0, done
    assert "creds -> /etc/passwd" in done.err and "--follow-links" in done.err, done
    warning = [line for line in done.err_lines if line.startswith("warning:")]
    assert len(warning) == 1 and ".env, keys/server.pem" in warning[0], done
    assert "id_ed25519.pub" not in warning[0] and ".env.example" not in warning[0]

    # A rule naming a secret is the user's decision: no warning for it.
    (project / ".rtrainignore").write_text("keys/*.pem\n")
    run_id = cli.new_run_id()
    done = cli(
        *start_args(cli, run_id, "--include", ".env", "--no-follow", "--json", "--", "true"),
        cwd=project,
    )
    assert done.code == 0, done
    assert "secrets" not in done.json()["code"], done

    # --follow-links ships what the link points to.
    run_id = cli.new_run_id()
    done = cli(*start_args(cli, run_id, "--follow-links", "--no-follow", "--", "true"), cwd=project)
    assert done.code == 0, done
    creds = cli.far_run_dir(run_id) / "creds"
    assert not creds.is_symlink() and creds.read_bytes() == passwd


def test_a_trainer_rewriting_its_cached_input_in_place_never_changes_the_cache(cli: Cli) -> None:
    # 64 MiB and more used to be a hard link to the cache entry: a trainer that made it
    # writable and rewrote it changed the cache, and every later run got its bytes.
    big = cli.cwd / "big.bin"
    big.write_bytes(bytes(range(256)) * (64 * 1024 * 4))
    digest = sha256(big.read_bytes())
    cli.file("config.yaml", "lr: 0.1\n")
    first = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "config.yaml", "-d", "big.bin", "--run-id", first,
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--", "true",
    )  # fmt: skip
    assert done.code == 0, done
    trainer = (
        "import hashlib, os, stat\n"
        "os.chmod('big.bin', os.stat('big.bin').st_mode | stat.S_IWUSR)\n"
        "with open('big.bin', 'r+b') as f:\n    f.write(b'trainer was here')\n"
        "print(hashlib.sha256(open('big.bin', 'rb').read()).hexdigest(), flush=True)\n"
    )
    second = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "config.yaml", "-d", "big.bin", "--run-id", second,
        "--workdir", cli.workdir, "--gpus", "0", "--json", "--", "{python}", "-c", trainer,
    )  # fmt: skip
    assert done.code == 0, done
    started, *logs, end = done.json_lines()
    assert end["run"]["state"] == "completed", done
    assert {f["path"]: f.get("how") for f in started["shipped"]}["big.bin"] == "copied"
    # The trainer changed its own copy...
    assert "".join(entry["text"] for entry in logs).strip() != digest
    # ...and neither the cache nor the next run sees it.
    entry = cli.far_workdir / ".cache" / "inputs" / digest
    assert sha256(entry.read_bytes()) == digest
    third = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "config.yaml", "-d", "big.bin", "--run-id", third,
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--", "true",
    )  # fmt: skip
    assert done.code == 0, done
    assert sha256((cli.far_run_dir(third) / "big.bin").read_bytes()) == digest
    assert sha256((cli.far_run_dir(first) / "big.bin").read_bytes()) == digest


def test_a_cache_entry_changed_in_place_with_the_same_size_is_never_placed(cli: Cli) -> None:
    data = cli.cwd / "data.bin"
    data.write_bytes(b"the shipped bytes\n" * 1000)
    digest = sha256(data.read_bytes())
    cli.file("config.yaml", "lr: 0.1\n")
    done = cli(
        "start", "plain", "-c", "config.yaml", "-d", "data.bin", "--run-id", cli.new_run_id(),
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--", "true",
    )  # fmt: skip
    assert done.code == 0, done
    entry = cli.far_workdir / ".cache" / "inputs" / digest
    # Rewritten in place, same size, mode put back: only its bytes differ.
    mode = entry.stat().st_mode
    entry.chmod(mode | 0o200)
    with entry.open("r+b") as f:
        f.write(b"THE")
    entry.chmod(mode)
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "config.yaml", "-d", "data.bin", "--run-id", run_id,
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--json", "--", "true",
    )  # fmt: skip
    assert done.code == 0, done
    started = done.json_lines()[0]
    shipped = {f["path"]: (f.get("how", "sent"), f.get("sentBytes", 0)) for f in started["shipped"]}
    assert shipped["data.bin"] == ("sent", data.stat().st_size)
    assert sha256((cli.far_run_dir(run_id) / "data.bin").read_bytes()) == digest
    assert sha256(entry.read_bytes()) == digest


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_every_transport_ships_an_outside_link_as_a_link(cli: Cli, host: str) -> None:
    project = cli.cwd / "project"
    project.mkdir()
    (project / "config.yaml").write_text("lr: 0.1\n")
    os.symlink("/etc/passwd", project / "creds")
    workdir = str(cli.local_workdir) if host == "local" else cli.workdir
    look = "import os; print(os.path.islink('creds'), os.readlink('creds'))"
    done = cli(
        "start", host, "-c", "config.yaml", "--code", ".", "--run-id", cli.new_run_id(),
        "--workdir", workdir, "--gpus", "0", "--", "{python}", "-c", look, cwd=project,
    )  # fmt: skip
    assert done.code == 0, done
    assert "True /etc/passwd" in done.out_lines, done


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--code", ".", "--include", "data/train.bin"],
         "--include 'data/train.bin' matches nothing in the code directory"),
        (["--include", "*.bin"], "--include names paths of the code directory; give --code"),
    ],
    ids=["matches-nothing", "without-code"],
)  # fmt: skip
def test_an_include_that_cannot_ship_anything_is_refused_before_any_ssh(
    cli: Cli, args: list[str], sentence: str
) -> None:
    project = nanogpt_project(cli.cwd / "nanogpt")
    # `closed` refuses every connection: the sentence proves nothing tried to reach it.
    done = cli("start", "closed", "-c", "config.yaml", *args, "--", "true", cwd=project)
    assert done.code != 0 and sentence in done.err, done
    assert "Traceback" not in done.err


def test_the_python_api_includes_follows_links_and_preflight_counts_the_same(cli: Cli) -> None:
    from rtrain import RemoteRunner

    project = nanogpt_project(cli.cwd / "nanogpt")
    os.symlink("/etc/hostname", project / "host_name")
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    run_id = cli.new_run_id()
    run = runner.start(
        project / "config.yaml",
        run_id=run_id,
        gpus=0,
        command=["{python}", "train.py"],
        code_dir=project,
        include=["data/*/train.bin"],
        follow_links=True,
    )
    lines: list[str] = []
    assert runner.tail(run, on_line=lines.append) == "completed"
    assert lines == [f"read {len(TRAIN_BIN)} bytes"]
    far = cli.far_run_dir(run_id)
    assert (far / "host_name").read_bytes() == Path("/etc/hostname").read_bytes()
    assert not (far / "host_name").is_symlink()
    verdict = runner.preflight(
        expect_gpus=0,
        config_path=project / "config.yaml",
        code_dir=project,
        include=["data/*/train.bin"],
        follow_links=True,
    )
    # What start shipped: the code (its config once), train.bin included, the link followed.
    names = ["train.py", "model.py", "config.yaml", ".gitignore", "host_name",
             "data/shakespeare_char/prepare.py", "data/shakespeare_char/train.bin"]  # fmt: skip
    assert verdict.result.disk.ship_bytes == sum((project / n).stat().st_size for n in names)
