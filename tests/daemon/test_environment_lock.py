"""The lock of a start's environment, judged on this machine before any SSH, and the words
the far builder finds the failing requirement by (daemon/environments, env_build.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtrain.daemon.environments.lock_file import chosen_lock
from rtrain.daemon.remote.env_build import environment_key, failing_requirement
from rtrain.protocol.errors import Kind, RpcError


def _refusal(tmp_path: Path, text: str) -> RpcError:
    lock = tmp_path / "requirements.txt"
    lock.write_text(text)
    with pytest.raises(RpcError) as raised:
        chosen_lock(str(lock), None)
    return raised.value


def test_a_lock_is_read_as_pip_reads_it(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.txt"
    text = (
        "# pinned\n--extra-index-url https://example.org/simple\n"
        "torch==2.3 \\\n  ; python_version >= '3.8'\npeft  # adapters\n"
    )
    lock.write_text(text)
    chosen = chosen_lock(str(lock), None)
    assert chosen is not None and chosen.content == text.encode()
    assert chosen_lock("", str(lock)) is None  # asked for none
    host = chosen_lock(None, str(lock))
    assert host is not None and host.source == str(lock)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("peft\n-r other.txt\n", "line 2: -r names another file"),
        ("-e .\n", "line 1: '-e .' installs a local project"),
        ("./vendor/pkg\n", "line 1: './vendor/pkg' installs a local project"),
        ("peft\ntorch>=>2\n", "line 2: requirement 'torch>=>2' is not one pip understands"),
        ("# nothing\n--index-url https://example.org\n", "it names no requirement"),
    ],
)
def test_a_lock_rtrain_cannot_build_is_refused_with_its_line(
    tmp_path: Path, text: str, said: str
) -> None:
    error = _refusal(tmp_path, text)
    assert error.kind == Kind.INVALID_REQUIREMENT
    assert said in error.message, error.message


def test_a_missing_lock_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(RpcError) as raised:
        chosen_lock(str(tmp_path / "absent.txt"), None)
    assert raised.value.kind == Kind.LOCAL_FILE_MISSING
    assert "does not exist" in raised.value.message


def test_the_failing_requirement_is_found_in_pip_and_uv_words() -> None:
    lock = b"termcolor\nNo_Such.Pkg==1.0\n"
    pip = [
        "Collecting termcolor",
        "ERROR: Could not find a version that satisfies the requirement "
        "no-such-pkg==1.0 (from versions: none)",
        "ERROR: No matching distribution found for no-such-pkg==1.0",
    ]
    said = failing_requirement(lock, pip)
    assert said == (
        "line 2: No_Such.Pkg==1.0: ERROR: No matching distribution found for no-such-pkg==1.0"
    )
    uv = [
        "  × No solution found when resolving dependencies:",
        "  ╰─▶ Because no-such-pkg was not found in the package registry and you require",
        "      no-such-pkg==1.0, we can conclude that your requirements are unsatisfiable.",
    ]
    assert failing_requirement(lock, uv).startswith("line 2: No_Such.Pkg==1.0: ")
    # Nothing of the lock named: the tool's own last error line.
    assert failing_requirement(lock, ["ERROR: disk quota exceeded"]) == (
        "ERROR: disk quota exceeded"
    )


def test_the_key_changes_with_the_lock() -> None:
    assert environment_key(b"termcolor\n") == environment_key(b"termcolor\n")
    assert environment_key(b"termcolor\n") != environment_key(b"termcolor\niniconfig\n")
    assert len(environment_key(b"x\n")) == 20


def test_a_uv_lock_is_a_lock_with_its_pyproject_beside_it(tmp_path: Path) -> None:
    lock = tmp_path / "uv.lock"
    lock.write_text('version = 1\nrequires-python = ">=3.8"\n')
    with pytest.raises(RpcError) as missing:
        chosen_lock(str(lock), None)
    assert missing.value.kind == Kind.LOCAL_FILE_MISSING
    assert "pyproject.toml" in missing.value.message

    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "x"\nversion = "0"\n')
    chosen = chosen_lock(None, str(lock))  # the host's config.toml may name one too
    assert chosen is not None and chosen.pyproject == project.read_bytes()

    lock.write_text("termcolor\n")  # a requirements file under the lock's name
    with pytest.raises(RpcError) as wrong:
        chosen_lock(str(lock), None)
    assert wrong.value.kind == Kind.INVALID_REQUIREMENT
    assert "not TOML" in wrong.value.message

    lock.write_text("version = 1\n")
    project.write_text("[tool.other]\nx = 1\n")
    with pytest.raises(RpcError) as no_project:
        chosen_lock(str(lock), None)
    assert "has no [project] table" in no_project.value.message


def test_a_uv_project_s_identity_is_what_the_far_builder_hashes(tmp_path: Path) -> None:
    """The daemon asks whether an environment is built (a pool's placement) with the same
    bytes the builder keys it by, pyproject.toml and all."""
    from rtrain.daemon.environments.run_environment import environment_files
    from rtrain.daemon.remote.env_build import _lock_bytes

    (tmp_path / "uv.lock").write_text('version = 1\nrequires-python = ">=3.8"\n')
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    lock = chosen_lock(str(tmp_path / "uv.lock"), None)
    assert lock is not None
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name, content in environment_files(lock):
        (run_dir / name).write_bytes(content)
    far = _lock_bytes(str(run_dir / "rtrain-uv.lock"))
    assert environment_key(far) == environment_key(lock.identity)
    assert lock.identity != lock.content  # the pyproject is part of it
