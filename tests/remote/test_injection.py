"""Every argument is data: shell metacharacters in any position are never executed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import PYTHON, Remote, wait_file


def hostile_values(marker: Path) -> list[str]:
    touch = f"touch {marker}"
    return [
        f"x;{touch}",
        f"$({touch})",
        f"`{touch}`",
        f"x|{touch}",
        f"x && {touch}",
        f"'; {touch}; '",
        f'"; {touch}; "',
        f"x\n{touch}",
        f"~/$({touch})",
        f"-x;{touch}",
    ]


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.mark.slow
def test_hostile_arguments_to_every_script(remote: Remote, marker: Path) -> None:
    run_id, run_dir = remote.prepare()
    (run_dir / "train.log").write_text("log\n")
    for bad in hostile_values(marker):
        calls: list[tuple[str, ...]] = [
            ("prepare", "~/.rtrain", bad),
            ("prepare", bad, "ok-id"),
            ("status", bad, bad),
            ("status", "~/.rtrain", bad),
            ("launch", str(run_dir.parent / bad), bad, PYTHON, PYTHON, "-c", "pass"),
            ("stop", str(run_dir), bad, "1", "1"),
            ("stop", str(run_dir), run_id, bad, bad),
            ("read_log", str(run_dir), bad, "0", "10", "-"),
            ("read_log", str(run_dir), run_id, bad, bad, bad),
            ("list_files", str(run_dir), bad),
            ("list_files", bad, "x"),
            ("send", str(run_dir), bad),
            ("receive", str(run_dir / bad), bad),
            ("preflight", bad, bad),
        ]
        for call in calls:
            result = remote.run(*call, timeout=60)
            assert not marker.exists(), (call, result)
            assert result.returncode in (0, 2, 3, 4, 5, 7, 8, 9, 14, 17, 21), (call, result)


def test_hostile_trainer_arguments_and_secrets_arrive_verbatim(
    remote: Remote, marker: Path
) -> None:
    run_id, run_dir = remote.prepare()
    words = hostile_values(marker)
    code = "import json, sys; json.dump(sys.argv[1:], open('argv.json', 'w'))"
    secret = f"VALUE\t{__import__('base64').b64encode(f'$(touch {marker})'.encode()).decode()}\n"

    result = remote.run(
        "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", code, *words, stdin=secret.encode()
    )

    assert result.returncode == 0, result
    wait_file(run_dir / ".rtrain" / "status")
    assert json.loads((run_dir / "argv.json").read_text()) == words
    assert json.loads((run_dir / "meta.json").read_text())["command"][3:] == words
    assert not marker.exists()


@pytest.mark.slow
def test_no_literal_tilde_directory_anywhere(remote: Remote) -> None:
    remote.run("prepare", "~/.rtrain", "a")
    remote.run("status", "~/.rtrain", "a")
    remote.run("preflight", PYTHON + "-missing", "~/.rtrain")

    assert not (remote.home / "~").exists()
    assert not Path("~").exists()
