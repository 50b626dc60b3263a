"""The launch input has one writer (contract.launch_stdin) and one reader per language
(contract.split_launch_stdin; lib/launch_input.sh's read_launch_input): the values the daemon writes
are the values the far side reads, byte for byte, in every shell a host may have."""

from __future__ import annotations

import json
import subprocess

import pytest

from rtrain.daemon.remote.contract.launch_scripts import (
    LimitsLine,
    launch_stdin,
    split_launch_stdin,
)
from rtrain.daemon.remote.script_libraries import library
from tests.remote.conftest import shells

# The libraries launch.sh is sent with that read its input: core.sh, then launch_input.sh.
LIBRARIES = "\n".join(library(name).read_text() for name in ("core", "launch_input"))
# Print what read_launch_input decoded, NUL-separated (values may hold newlines and tabs).
SHOW = r"""
read_launch_input "$1"
i=1
while [ "$i" -le "$secret_count" ]; do
	eval "printf 'secret\0%s\0%s\0' \"\$secret_name_$i\" \"\$secret_value_$i\""
	i=$((i + 1))
done
[ "$1" = options ] || exit 0
i=1
while [ "$i" -le "$env_count" ]; do
	eval "printf 'env\0%s\0%s\0' \"\$env_name_$i\" \"\$env_value_$i\""
	i=$((i + 1))
done
printf 'setup\0%s\0attempt\0%s\0wrapper\0%s\0limits\0%s\0meta\0%s\0' \
	"$setup" "$attempt" "$wrapper" "$limits" "$meta_extra"
"""

SECRETS = {"HF_TOKEN": "hf_abc\n", "WEIRD": "tab\there; $(rm -rf /) `x` 'q' \"dq\" ✓\n\n"}
ENV = {"LANG": "C.UTF-8", "MULTI": "line one\nline two\n", "EMPTY": ""}
SETUP = "pip install -r requirements.txt && echo 'done' > ready\n"
META = {"launcher": "torchrun", "command": ["{python}", "-c", "print('ü')"], "ranks": 4}


def _read(shell: str, data: bytes, mode: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [shell, "-c", LIBRARIES + "\n" + SHOW, "rtrain", mode],
        input=data,
        capture_output=True,
        timeout=60,
    )


def _fields(stdout: bytes) -> list[str]:
    return stdout.decode().split("\0")[:-1]


@pytest.mark.parametrize("shell", shells())
def test_the_sh_reader_reads_what_the_python_writer_wrote(shell: str) -> None:
    limits = LimitsLine(max_duration=21600, stall_after=1800, on_stall="stop", grace=12.5)
    data = launch_stdin(SECRETS, ENV, SETUP, META, attempt=3, wrapper=2, limits=limits)
    done = _read(shell, data, "options")
    assert done.returncode == 0, done.stderr
    fields = _fields(done.stdout)
    secrets: dict[str, str] = {}
    env: dict[str, str] = {}
    scalars: dict[str, str] = {}
    while fields:
        key, name = fields.pop(0), fields.pop(0)
        if key in ("secret", "env"):
            (secrets if key == "secret" else env)[name] = fields.pop(0)
        else:
            scalars[key] = name
    assert secrets == SECRETS
    assert env == ENV
    assert scalars["setup"] == SETUP
    assert (scalars["attempt"], scalars["wrapper"]) == ("3", "2")
    assert scalars["limits"] == "21600 1800 stop 12.5"
    meta = json.loads("{" + scalars["meta"].strip().rstrip(",") + "}")
    assert meta == META


def test_the_python_reader_reads_what_the_python_writer_wrote() -> None:
    data = launch_stdin(SECRETS, ENV, SETUP, META, attempt=3)
    given = split_launch_stdin(data)
    assert (given.env, given.setup, given.meta, given.attempt) == (ENV, SETUP, META, 3)
    assert given.secrets == launch_stdin(SECRETS, {}, None, {})


@pytest.mark.parametrize("shell", shells())
def test_the_secrets_only_reader_takes_the_secret_lines_and_refuses_the_rest(shell: str) -> None:
    given = split_launch_stdin(launch_stdin(SECRETS, ENV, SETUP, META))
    done = _read(shell, given.secrets, "secrets")
    assert done.returncode == 0, done.stderr
    assert len(_fields(done.stdout)) == 3 * len(SECRETS)
    refused = _read(shell, launch_stdin(SECRETS, ENV, None, {}), "secrets")
    assert refused.returncode != 0
    assert b"error\tbad_secret" in refused.stdout
