"""Which cipher a host's master connection asks for first.

OpenSSH's default list puts chacha20-poly1305 first: the right pick for a CPU without AES
instructions. Every byte rtrain moves to a host goes through its master's one cipher, and
on a CPU with AES instructions AES-GCM costs ssh and sshd much less per byte (measured on
the suite's loopback host: about 420 MB/s over one stream with chacha20-poly1305, 600-790
MB/s with AES-GCM). So where this machine's CPU has them and the user's ssh config leaves
the cipher list at ssh's own default, the master puts the AES-GCM ciphers first and keeps
the rest of that list behind them, so a server without AES-GCM still agrees on one. A list
the user wrote is used as written. The server's CPU is not known before connecting; a
server CPU without AES instructions is rare where GPUs are (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

AES_GCM = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")

_default_list: list[str] | None = None


async def master_cipher_options(alias: str, config: Path | None) -> list[str]:
    """`-o Ciphers=...` with AES-GCM first, or nothing where ssh's own choice stands."""
    if not local_cpu_has_aes():
        return []
    default = await _ssh_default_ciphers()
    chosen = await _effective_ciphers(alias, config)
    if not default or chosen != default:
        return []
    return ["-o", "Ciphers=" + ",".join(aes_gcm_first(default))]


def aes_gcm_first(ciphers: list[str]) -> list[str]:
    """The same ciphers, the AES-GCM ones (those the list holds) moved to its head."""
    head = [name for name in AES_GCM if name in ciphers]
    return head + [name for name in ciphers if name not in head]


def local_cpu_has_aes() -> bool:
    """Whether this machine's CPU has AES instructions (x86 `aes` flag, ARM `aes` feature)."""
    if sys.platform == "darwin":
        return True  # every Mac that runs a current macOS has them
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return "aes" in value.split()
    except OSError:
        pass
    return False


async def _ssh_default_ciphers() -> list[str]:
    """ssh's compiled-in list, as it applies it with no config file at all."""
    global _default_list
    if _default_list is None:
        _default_list = await _ciphers_of(["ssh", "-F", "/dev/null", "-G", "rtrain-default"])
    return _default_list


async def _effective_ciphers(alias: str, config: Path | None) -> list[str]:
    return await _ciphers_of(["ssh", *(["-F", str(config)] if config else []), "-G", alias])


async def _ciphers_of(argv: list[str]) -> list[str]:
    """The `ciphers` line of `ssh -G`; empty where ssh could not say."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return []
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 10)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return []
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "ciphers":
            return [name for name in value.strip().split(",") if name]
    return []
