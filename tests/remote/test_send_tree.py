"""send_tree.sh: many files of a run in one stream, each with its own sha256 and its states
before and after, and never a byte of anything outside the run. Each test runs with python3
(one far python3 sends the batch) and on a host without it (the shell and its tools do)."""

from __future__ import annotations

import hashlib
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


ODD_NAMES = [
    "a b.txt",
    "ünï/çödé ✓.bin",
    "-starts-with-dash",
    'quote\'s "double"',
    "back\\slash",
    "star*and?[x]",
    "$(touch pwned)",
    "empty",
    "deep/er/est/file",
]


def populate(run_dir: Path) -> dict[str, bytes]:
    files = {}
    for n, name in enumerate(ODD_NAMES):
        data = b"" if name == "empty" else bytes((n + i) % 256 for i in range(300 * n + 1))
        path = run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[name] = data
    return files


def verdict(stderr: str, key: str) -> list[str]:
    return [line.split("\t", 1)[1] for line in stderr.splitlines() if line.startswith(key + "\t")]


def test_files_come_in_the_order_asked_each_with_its_sha256_and_states(
    remote: Remote, env: dict[str, str]
) -> None:
    _, run_dir = remote.prepare()
    files = populate(run_dir)
    asked = list(reversed(ODD_NAMES))

    names = "".join(f"{n}\n" for n in asked).encode()
    result = remote.run("send_tree", str(run_dir), stdin=names, env=env)

    assert result.returncode == 0, result
    assert result.stdout == b"".join(files[name] for name in asked)
    assert verdict(result.stderr, "sha256") == [hashlib.sha256(files[n]).hexdigest() for n in asked]
    before, after = verdict(result.stderr, "state"), verdict(result.stderr, "after")
    assert before == after and len(before) == len(asked)
    assert [int(state.split(" ")[2]) for state in before] == [len(files[n]) for n in asked]
    assert verdict(result.stderr, "sent") == [str(len(asked))]
    assert not (run_dir / "pwned").exists() and not (remote.home / "pwned").exists()


def test_a_path_leaving_the_run_is_refused_before_any_byte(
    remote: Remote, tmp_path: Path, env: dict[str, str]
) -> None:
    _, run_dir = remote.prepare()
    populate(run_dir)
    secret = tmp_path / "secret"
    secret.write_bytes(b"not the run's")
    (run_dir / "link out").symlink_to(secret)
    (run_dir / "folder out").symlink_to(tmp_path)

    for rel in ["link out", "folder out/secret", "../outside", "deep/../../x"]:
        result = remote.run("send_tree", str(run_dir), stdin=f"a b.txt\n{rel}\n".encode(), env=env)

        assert result.returncode == 7, (rel, result)
        assert result.stdout == b"", rel
        assert verdict(result.stderr, "error")[0].startswith("path_outside_run"), result


def test_a_missing_file_is_refused_before_any_byte(remote: Remote, env: dict[str, str]) -> None:
    _, run_dir = remote.prepare()
    populate(run_dir)

    result = remote.run("send_tree", str(run_dir), stdin=b"a b.txt\nnot there\n", env=env)

    assert result.returncode == 8, result
    assert result.stdout == b""
    assert verdict(result.stderr, "error") == ["not_a_file\tnot there"]
