"""A container image for a far user's rootless Podman, built here without any pull: a rootfs
of this machine's busybox and the C library it needs, plus an /etc/os-release that only the
image has, imported with `podman import`. Also the far user's containers.conf that Podman
needs on these machines (cgroupfs, runc, no default ulimits): test host settings, never
rtrain's."""

from __future__ import annotations

import io
import os
import pwd
import shutil
import subprocess
import tarfile
from pathlib import Path

from .session import TestHosts

IMAGE = "localhost/rtrain-test-busybox:latest"
# What the image's /etc/os-release says: the proof a command ran inside it.
IMAGE_MARK = "rtrain-test-image"
BUSYBOX_TOOLS = ("sh", "cat", "env", "sleep", "echo", "printf", "ls", "id", "true", "ps")
CONTAINERS_CONF = """[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"

[containers]
default_ulimits = []
"""


def write_containers_conf(hosts: TestHosts, user: str) -> None:
    account = pwd.getpwnam(user)
    folder = hosts.home(user) / ".config" / "containers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "containers.conf").write_text(CONTAINERS_CONF)
    for path in (folder.parent, folder, folder / "containers.conf"):
        os.chown(path, account.pw_uid, account.pw_gid)


def _libraries(binary: str) -> list[str]:
    listed = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in listed.splitlines():
        words = line.split()
        path = next((word for word in words if word.startswith("/")), None)
        if path is not None:
            found.append(path)
    return found


def rootfs_tarball(target: Path) -> Path:
    """A tarball of the image's root: /bin/busybox and its links, its libraries, /etc."""
    busybox = shutil.which("busybox")
    assert busybox is not None
    tar_path = target / "rootfs.tar"
    with tarfile.open(tar_path, "w") as tar:

        def add_dir(name: str) -> None:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)

        for name in ("bin", "etc", "tmp", "lib", "lib64", "lib/x86_64-linux-gnu", "proc", "dev"):
            add_dir(name)
        tar.add(busybox, arcname="bin/busybox")
        for tool in BUSYBOX_TOOLS:
            link = tarfile.TarInfo(f"bin/{tool}")
            link.type = tarfile.SYMTYPE
            link.linkname = "busybox"
            tar.addfile(link)
        for library in _libraries(busybox):
            tar.add(os.path.realpath(library), arcname=library.lstrip("/"))
        release = f'ID={IMAGE_MARK}\nNAME="{IMAGE_MARK}"\n'.encode()
        info = tarfile.TarInfo("etc/os-release")
        info.size = len(release)
        info.mode = 0o644

        tar.addfile(info, io.BytesIO(release))
    return tar_path


def import_image(hosts: TestHosts, user: str, tarball: Path) -> str:
    """The image imported into `user`'s Podman store (idempotent); its name."""
    write_containers_conf(hosts, user)
    # On stdin: the far user cannot reach a file under this session's private temp dirs.
    with tarball.open("rb") as stream:
        done = hosts.run_as(
            user,
            ["podman", "import", "--change", "CMD=/bin/sh", "-", IMAGE],
            timeout=300,
            stdin=stream,
        )
    assert done.returncode == 0, done.stderr
    return IMAGE


def user_containers(hosts: TestHosts, user: str) -> list[str]:
    """Every container of `user`'s Podman (running or not), by name."""
    done = hosts.run_as(user, ["podman", "ps", "-a", "--format", "{{.Names}}"], timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
