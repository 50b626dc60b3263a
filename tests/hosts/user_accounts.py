"""The non-root remote users the test sshds log into, and what lives in their homes.

Users are created once per machine and reused. Other test sessions may use them at the same
time, so every file is replaced atomically and the client key of this session is added to
(and later removed from) authorized_keys under a lock instead of overwriting the file.
"""

import fcntl
import os
import pwd
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.hosts.fake_nvidia_smi import DEFAULT_GPU_COUNT, GPU_COUNT_FILE, render_script
from tests.hosts.remote_shell_files import (
    BASHRC,
    CONSOLE_GATEWAY,
    INPUTRC,
    MANAGED_DIR,
    NOISY_BASHRC,
    NOISY_PROFILE,
    PROFILE,
)
from tests.hosts.worker import worker_user

GPU_USER = worker_user("rtrain-gpu")
NOGPU_USER = worker_user("rtrain-nogpu")
# Its ~/.bashrc and ~/.profile print to stdout and stderr (a lab server's greeting).
NOISY_USER = worker_user("rtrain-noisy")
# A GPU user of its own for GPU telemetry: its fake nvidia-smi answers to loads that test
# trainers declare (fake_nvidia_smi.py), and no older copy of the suite rewrites it.
GPULOAD_USER = worker_user("rtrain-gpuload")
# A GPU user of its own for GPUs shared between runs, where a test's process that is no run
# loads a GPU (someone else's job) without any other test seeing it.
GPUSHARE_USER = worker_user("rtrain-gpushare")

# Comment on this session's client key; the pid lets a later session drop keys of dead ones.
KEY_COMMENT_PREFIX = "rtrain-test-hosts:"
USERADD_ATTEMPTS = 5

# A function from the current authorized_keys lines to the new ones.
LinesEdit = Callable[[list[str]], list[str]]


def ensure_user(name: str) -> pwd.struct_passwd:
    """Create the user if missing and make sure sshd accepts the account (no `!` lock)."""
    account = _find_user(name)
    attempt = 0
    while account is None:
        created = subprocess.run(
            ["useradd", "-m", "-s", "/bin/bash", name], capture_output=True, text=True
        )
        account = _find_user(name)
        attempt += 1
        if account is None and attempt == USERADD_ATTEMPTS:
            raise RuntimeError(f"useradd {name} failed: {created.stderr.strip()}")
        if account is None:
            # Another session may hold the passwd lock while creating the same user.
            time.sleep(0.2)
    if _shadow_password(name) != "*":
        # With UsePAM no, sshd refuses a locked ("!") account even for key logins.
        subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)
    return account


def _find_user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _shadow_password(name: str) -> str | None:
    try:
        lines = Path("/etc/shadow").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":")
        if fields[0] == name and len(fields) > 1:
            return fields[1]
    return None


def install_home_files(account: pwd.struct_passwd, with_gpus: bool, noisy: bool = False) -> None:
    """Dotfiles, the console gateway and (for the GPU user) the fake nvidia-smi."""
    home = Path(account.pw_dir)
    uid, gid = account.pw_uid, account.pw_gid
    bashrc, profile = (NOISY_BASHRC, NOISY_PROFILE) if noisy else (BASHRC, PROFILE)
    for name, text in ((".bashrc", bashrc), (".profile", profile), (".inputrc", INPUTRC)):
        write_atomically(home / name, text, 0o644, uid, gid)
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    os.chown(ssh_dir, uid, gid)
    # Root-owned, like system binaries on a real host; the user can read and run them.
    managed = home / MANAGED_DIR
    (managed / "bin").mkdir(mode=0o755, parents=True, exist_ok=True)
    write_atomically(managed / "console-gateway", CONSOLE_GATEWAY, 0o755, 0, 0)
    fake = managed / "bin" / "nvidia-smi"
    if with_gpus:
        write_atomically(fake, render_script(), 0o755, 0, 0)
        if not (home / GPU_COUNT_FILE).exists():
            write_gpu_count(home, DEFAULT_GPU_COUNT)
    else:
        fake.unlink(missing_ok=True)


def console_gateway_path(home: Path) -> Path:
    return home / MANAGED_DIR / "console-gateway"


def write_gpu_count(home: Path, count: int) -> None:
    write_atomically(home / GPU_COUNT_FILE, f"{count}\n", 0o644, 0, 0)


def authorize_key(account: pwd.struct_passwd, public_key: str) -> None:
    """Add one key line to ~/.ssh/authorized_keys, dropping keys of sessions that are gone."""

    def update(lines: list[str]) -> list[str]:
        kept = [line for line in lines if not _is_stale_session_key(line)]
        return kept if public_key in kept else [*kept, public_key]

    _edit_authorized_keys(account, update)


def revoke_key(account: pwd.struct_passwd, public_key: str) -> None:
    _edit_authorized_keys(account, lambda lines: [line for line in lines if line != public_key])


def session_key_comment() -> str:
    return f"{KEY_COMMENT_PREFIX}{os.getpid()}"


def _is_stale_session_key(line: str) -> bool:
    comment = line.rsplit(" ", 1)[-1]
    if not comment.startswith(KEY_COMMENT_PREFIX):
        return False
    try:
        pid = int(comment.removeprefix(KEY_COMMENT_PREFIX))
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return True
    except PermissionError:
        return False
    return False


def _edit_authorized_keys(account: pwd.struct_passwd, edit: LinesEdit) -> None:
    home = Path(account.pw_dir)
    keys_path = home / ".ssh" / "authorized_keys"
    lock_path = home / MANAGED_DIR / "authorized_keys.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lines = keys_path.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        lines = [line for line in lines if line.strip()]
        new_lines = edit(lines)
        text = "".join(f"{line}\n" for line in new_lines)
        write_atomically(keys_path, text, 0o600, account.pw_uid, account.pw_gid)


def write_atomically(path: Path, text: str, mode: int, uid: int, gid: int) -> None:
    """Replace path in one rename so a concurrent reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.chown(temporary, uid, gid)
    os.chmod(temporary, mode)
    os.replace(temporary, path)
