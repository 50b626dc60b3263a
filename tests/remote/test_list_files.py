"""list_files.sh: what a fetch would bring home, and never anything outside the run. Each
test runs with python3 (it walks a directory) and on a host without it (the shell does)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Remote


@pytest.fixture(params=["python3", "no python"])
def env(
    request: pytest.FixtureRequest, remote: Remote, stripped_path: Callable[[set[str]], str]
) -> dict[str, str]:
    if request.param == "python3":
        return remote.env
    return {**remote.env, "PATH": stripped_path({"python3"})}


def file_line(run_dir: Path, rel: str) -> list[str]:
    data = (run_dir / rel).read_bytes()
    return [str(len(data)), hashlib.sha256(data).hexdigest(), rel]


def populate(run_dir: Path) -> None:
    (run_dir / "lora model" / "ckpt-1" / "nested").mkdir(parents=True)
    (run_dir / "lora model" / "adapter config.json").write_text('{"r": 8}\n')
    (run_dir / "lora model" / "ckpt-1" / "wëights ✓.bin").write_bytes(bytes(range(256)) * 10)
    (run_dir / "lora model" / "ckpt-1" / "nested" / ".hidden").write_bytes(b"")
    (run_dir / "lora model" / "empty").mkdir()
    (run_dir / "lora model" / "link to config").symlink_to("adapter config.json")
    (run_dir / "lora model" / "link to dir").symlink_to("ckpt-1")
    os.mkfifo(run_dir / "lora model" / "a fifo")


def test_directory_lists_every_regular_file_recursively(
    remote: Remote, env: dict[str, str]
) -> None:
    _, run_dir = remote.prepare()
    populate(run_dir)

    result = remote.run("list_files", str(run_dir), "lora model", env=env)

    assert result.returncode == 0, result
    assert sorted(result.values("file")) == sorted(
        [
            file_line(run_dir, "lora model/adapter config.json"),
            file_line(run_dir, "lora model/ckpt-1/wëights ✓.bin"),
            file_line(run_dir, "lora model/ckpt-1/nested/.hidden"),
            file_line(run_dir, "lora model/link to config"),
        ]
    )
    assert result.values("dir") == [["lora model/empty"]]
    assert result.values("error") == []


def test_single_file_and_whole_run_dir(remote: Remote, env: dict[str, str]) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "train.log").write_text("hello\n")
    (run_dir / "out").mkdir()
    (run_dir / "out" / "a.txt").write_text("a")

    single = remote.run("list_files", str(run_dir), "./train.log", env=env)
    whole = remote.run("list_files", str(run_dir), ".", env=env)

    assert single.lines == [["file", *file_line(run_dir, "train.log")]]
    assert sorted(whole.values("file")) == sorted(
        [file_line(run_dir, "train.log"), file_line(run_dir, "out/a.txt")]
    )


def test_symlink_leaving_the_run_is_refused(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    _, run_dir = remote.prepare()
    secret = tmp_path / "outside.txt"
    secret.write_text("not yours\n")
    (run_dir / "out").mkdir()
    (run_dir / "out" / "fine.txt").write_text("fine")
    (run_dir / "out" / "escape").symlink_to(secret)
    (run_dir / "direct").symlink_to(tmp_path)

    nested = remote.run("list_files", str(run_dir), "out", env=env)
    direct = remote.run("list_files", str(run_dir), "direct/outside.txt", env=env)

    assert nested.returncode == 7
    assert nested.lines == [["error", "path_outside_run", "out/escape"]], "no partial listing"
    assert direct.returncode == 7
    assert direct.lines == [["error", "path_outside_run", "direct/outside.txt"]]


def test_missing_path_is_not_found(remote: Remote, env: dict[str, str]) -> None:
    _, run_dir = remote.prepare()

    result = remote.run("list_files", str(run_dir), "no/such/thing", env=env)

    assert result.returncode == 8
    assert result.lines == [["error", "not_found", "no/such/thing"]]


def test_names_with_newlines_are_refused(remote: Remote, env: dict[str, str]) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "out").mkdir()
    (run_dir / "out" / "two\nlines").write_text("x")

    result = remote.run("list_files", str(run_dir), "out", env=env)

    assert result.returncode == 9
    assert result.values("error")[0][0] == "bad_name"
    assert result.values("file") == []


def test_a_dangling_link_to_outside_the_run_is_refused(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "out").mkdir()
    (run_dir / "out" / "fine.txt").write_text("fine")
    (run_dir / "out" / "later").symlink_to(tmp_path / "not yet there")

    result = remote.run("list_files", str(run_dir), "out", env=env)

    assert result.returncode == 7, result
    assert result.lines == [["error", "path_outside_run", "out/later"]]
