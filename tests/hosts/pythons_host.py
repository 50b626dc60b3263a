"""A far user with two pythons, the way images often are: one venv holds torch, one does not.

User `rtrain-pythons` (fake nvidia-smi with 2 GPUs, like `rtrain-gpu`) has
- `~/venvs/train`: a venv whose site-packages holds the suite's own CPU torch (and numpy,
  typing_extensions, which `import torch` needs), hard-linked from where the test process
  imports them, so it costs no copy; where hard links cannot be made, they are copied once;
- `~/venvs/bare`: a venv with nothing in it.
Both are built once per machine and reused. The user has an sshd of its own (sharing the
test hosts' host key) that accepts a few variables from the client, so each test can give
its alias what the far side sees without touching a shared file:
- `HF_ENDPOINT` (the Hub the far side asks), `RTRAIN_TEST_NOISE` (printed on stdout by
  ~/.bashrc, a noisy shell).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

from tests.hosts.remote_shell_files import BASHRC
from tests.hosts.session import TestHosts
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import (
    authorize_key,
    ensure_user,
    install_home_files,
    revoke_key,
    write_atomically,
)
from tests.hosts.worker import worker_user

PYTHONS_USER = worker_user("rtrain-pythons")
ACCEPTED = ("HF_ENDPOINT", "RTRAIN_TEST_NOISE")
# What `import torch` loads besides itself (see the module docstring).
TORCH_DISTRIBUTIONS = ("torch", "numpy", "typing_extensions")

# The noise comes before the interactive guard: bash reads ~/.bashrc for ssh commands too.
NOISY_BASHRC = BASHRC.replace(
    "\ncase $- in",
    '\n[ -z "${RTRAIN_TEST_NOISE-}" ] || printf \'%s\\n\' "$RTRAIN_TEST_NOISE"\n\ncase $- in',
    1,
)


class PythonsHost:
    """The user, its sshd, and aliases onto it."""

    def __init__(self, hosts: TestHosts) -> None:
        self.hosts = hosts
        self.home = Path()
        self._sshd: Sshd | None = None
        self._account: pwd.struct_passwd | None = None

    @property
    def train_python(self) -> str:
        return str(self.home / "venvs" / "train" / "bin" / "python")

    @property
    def bare_python(self) -> str:
        return str(self.home / "venvs" / "bare" / "bin" / "python")

    def start(self) -> None:
        account = ensure_user(PYTHONS_USER)
        self._account = account
        self.home = Path(account.pw_dir)
        install_home_files(account, with_gpus=True)
        write_atomically(self.home / ".bashrc", NOISY_BASHRC, 0o644, account.pw_uid, account.pw_gid)
        _ensure_venvs(self.home)
        authorize_key(account, self.hosts.user_public_key)
        self._sshd = Sshd(
            "pythons",
            self.hosts.base,
            self.hosts.host_key,
            [
                f"AllowUsers {PYTHONS_USER}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                f"AcceptEnv {' '.join(ACCEPTED)}",
            ],
        )
        self._sshd.start()
        self.alias("pythons")

    def alias(self, name: str, env: Mapping[str, str] | None = None) -> str:
        """An alias onto this user whose far side sees `env` (names from ACCEPTED)."""
        assert self._sshd is not None
        options = {}
        if env:
            assert set(env) <= set(ACCEPTED), env
            options["SetEnv"] = " ".join(f'{key}="{value}"' for key, value in env.items())
        self.hosts.add_alias(name, self._sshd.port, PYTHONS_USER, options)
        return name

    def close(self) -> None:
        if self._sshd is not None:
            self._sshd.close()
        if self._account is not None and self.hosts.user_public_key:
            revoke_key(self._account, self.hosts.user_public_key)


def _base_interpreter() -> str:
    """A python the far user can run, of the version the suite's torch was built for."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{version}", f"/usr/local/bin/{version}", sys.executable):
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError(f"no {version} outside the test process's own to base a venv on")


def _ensure_venvs(home: Path) -> None:
    for name, with_torch in (("bare", False), ("train", True)):
        venv = home / "venvs" / name
        if (venv / ".rtrain-test-ready").exists():
            continue
        # Built aside and renamed, so a concurrent session never sees half a venv.
        building = home / "venvs" / f".{name}.{uuid.uuid4().hex[:8]}"
        building.parent.mkdir(mode=0o755, exist_ok=True)
        subprocess.run(
            [_base_interpreter(), "-m", "venv", "--without-pip", str(building)],
            check=True,
            capture_output=True,
        )
        if with_torch:
            site = next(building.glob("lib/python*/site-packages"))
            for distribution in TORCH_DISTRIBUTIONS:
                _link_distribution(distribution, site)
        # The venv's own scripts name the path they were built at.
        for script in (building / "bin").iterdir():
            if script.is_file() and not script.is_symlink():
                text = script.read_bytes()
                if str(building).encode() in text:
                    script.write_bytes(text.replace(str(building).encode(), str(venv).encode()))
        (building / ".rtrain-test-ready").write_text("")
        # Root-owned and readable, like a system install: a hard link shares its owner with
        # the suite's own file, so nothing here is chowned.
        building.chmod(0o755)
        try:
            os.rename(building, venv)
        except OSError:
            shutil.rmtree(building, ignore_errors=True)  # another session won the race


def _link_distribution(name: str, site: Path) -> None:
    """The distribution's files (as installed for the test process) into `site`; one that is
    not installed here is left out (torch imports without numpy, only with a warning)."""
    try:
        distribution = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return
    files = distribution.files or []
    for relative in files:
        source = Path(str(distribution.locate_file(relative)))
        if not source.is_file() or ".." in relative.parts:
            continue
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)


def torch_available_here() -> bool:
    return importlib.util.find_spec("torch") is not None
