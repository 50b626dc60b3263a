"""The master's cipher order: AES-GCM first where it is cheap, the user's own list as written."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from rtrain.daemon.ssh.cipher_order import (
    AES_GCM,
    aes_gcm_first,
    local_cpu_has_aes,
    master_cipher_options,
)


def ssh_default_ciphers() -> list[str]:
    out = subprocess.run(
        ["ssh", "-F", "/dev/null", "-G", "somehost"], capture_output=True, text=True, check=True
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("ciphers "))
    return line.split(" ", 1)[1].split(",")


def test_the_order_keeps_every_cipher_of_the_list() -> None:
    default = ssh_default_ciphers()
    ordered = aes_gcm_first(default)
    assert sorted(ordered) == sorted(default)
    assert tuple(ordered[:2]) == AES_GCM
    # A list without AES-GCM is left as it is.
    assert aes_gcm_first(["chacha20-poly1305@openssh.com", "aes128-ctr"]) == [
        "chacha20-poly1305@openssh.com",
        "aes128-ctr",
    ]


def test_a_config_that_leaves_ciphers_alone_gets_aes_gcm_first(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("Host gpu\n  HostName 127.0.0.1\n")
    options = asyncio.run(master_cipher_options("gpu", config))
    if not local_cpu_has_aes():
        assert options == []
        return
    assert options[0] == "-o"
    chosen = options[1].removeprefix("Ciphers=").split(",")
    assert tuple(chosen[:2]) == AES_GCM
    assert sorted(chosen) == sorted(ssh_default_ciphers())


@pytest.mark.parametrize("ciphers", ["aes256-ctr", "chacha20-poly1305@openssh.com"])
def test_a_cipher_list_the_user_wrote_is_used_as_written(tmp_path: Path, ciphers: str) -> None:
    config = tmp_path / "config"
    config.write_text(f"Host gpu\n  HostName 127.0.0.1\n  Ciphers {ciphers}\n")
    assert asyncio.run(master_cipher_options("gpu", config)) == []
