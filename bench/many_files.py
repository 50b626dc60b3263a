"""Benchmark 6: a code directory of many small files, both ways, against tar over ssh.

For each link (direct, and through the delay proxy), with a tree of --files files of 4-64 KB
in 30 folders, each way measured interleaved with its reference:

- **ship, cold:** `run/start` of a trivial command with the tree as `--code`, into a fresh
  work directory (an empty input cache): every file sent and verified by its sha256 before it
  is placed; against `tar c DIR | ssh host tar x` into an empty folder (nothing verified).
- **ship, again:** the same start once more into the same work directory: nothing to send,
  every file placed from the host's cache. **One changed:** the same with one file rewritten.
- **fetch:** `run/fetch` of the cold start's run directory (the tree and a few files of
  the run) into an empty folder (every file verified); against `ssh host tar c DIR | tar x`.
- **scp -r** of the tree, as a user types it. Through the proxy it pays round trips per
  file and takes minutes, so there it copies a tenth of the files and the row says so.

Seconds are wall time from the request to the answer (a start's includes its launch).
"""

from __future__ import annotations

import fcntl
import os
import random
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.per_command_ssh import PerCommandSsh
from bench.processes import run_checked
from bench.sample import Sample
from bench.world import BenchWorld, Link
from rtrain.daemon.remote.cache_inputs import FILL_LOCK

# One in this many files goes through `scp -r` on a delayed link (a short mode: minutes else).
SCP_SHARE_DELAYED = 10
FOLDERS = 30
# Times two copies of run directory $1 on the far side: `cp -r`, then `tar c | tar x`.
FAR_COPIES = """
set -e
now() { date +%s.%N; }
a=$(now); cp -r "$1" "$1.cp"; b=$(now)
mkdir "$1.tar"; tar c -C "$1" . | tar x -C "$1.tar"; c=$(now)
rm -rf "$1.cp" "$1.tar"
# Untimed: the copies' writeback ends here, not inside the start timed next.
sync
awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "cp %.3f\\ntar %.3f\\n", b - a, c - b }'
"""


@dataclass
class ManyFiles:
    link: Link
    files: int
    megabytes: float
    ship: Sample = field(default_factory=Sample)
    ship_tar: Sample = field(default_factory=Sample)
    again: Sample = field(default_factory=Sample)
    one_changed: Sample = field(default_factory=Sample)
    fetch: Sample = field(default_factory=Sample)
    fetch_tar: Sample = field(default_factory=Sample)
    scp: Sample = field(default_factory=Sample)
    scp_files: int = 0
    # The floor of the same code again on this disk: the far side's own `cp -r` and
    # `tar c | tar x` of the run directory just placed, timed there (no ssh).
    far_cp: Sample = field(default_factory=Sample)
    far_tar: Sample = field(default_factory=Sample)


def make_tree(root: Path, count: int, seed: int = 7) -> int:
    """`count` files of random bytes in FOLDERS folders under `root`; their total size."""
    rng = random.Random(seed)
    total = 0
    for n in range(count):
        folder = root / f"d{n % FOLDERS:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        size = rng.randint(4096, 65536)
        (folder / f"f{n:05d}.bin").write_bytes(os.urandom(size))
        total += size
    return total


class ManyFilesBench:
    def __init__(self, world: BenchWorld, files: int, reps: int) -> None:
        self.world = world
        self.files = files
        self.reps = reps
        self.code = world.local_dir("many-files-code")
        self.total = make_tree(self.code, files)
        self.config = world.local_dir("many-files-inputs") / "config.yaml"
        self.config.write_text("steps: 1\n")
        self.serial = 0

    def run(self, links: list[Link]) -> list[ManyFiles]:
        assert self.world.daemon is not None
        client = self.world.daemon.client()
        try:
            return [self._link(client, link) for link in links]
        finally:
            client.close()

    def _link(self, client: Any, link: Link) -> ManyFiles:
        figures = ManyFiles(link, self.files, self.total / 1e6)
        ssh = PerCommandSsh(self.world.ssh_config, link.alias)
        client.request("host/preflight", {"host": link.alias, "gpus": 0})
        far_tree = ""
        placed: list[str] = []
        for rep in range(self.reps):
            workdir = f"{self.world.workdir}/files-{link.alias}-{rep}"
            far_tar = f"{self.world.workdir_abs}/tar-{link.alias}-{rep}"
            ways: list[tuple[Sample, Callable[[], Any]]] = [
                (figures.ship, partial(self._start, client, link, workdir)),
                (figures.ship_tar, partial(self._tar_up, ssh, far_tar)),
            ]
            for sample, way in ways[rep % 2 :] + ways[: rep % 2]:
                self._settle()
                began = time.perf_counter()
                done = way()
                sample.add(time.perf_counter() - began)
                if sample is figures.ship:
                    far_tree = done
                    # The host fills its cache after the answer; the next figure must not
                    # share the cores with that (nor find the cache half full).
                    self._wait_for_fill(workdir)
            self._settle()
            began = time.perf_counter()
            placed.append(self._start(client, link, workdir))
            figures.again.add(time.perf_counter() - began)
            changed = self.code / "d00" / "f00000.bin"
            changed.write_bytes(os.urandom(changed.stat().st_size))
            self._settle()
            began = time.perf_counter()
            self._start(client, link, workdir)
            figures.one_changed.add(time.perf_counter() - began)
        # The floor copies write and remove two copies of a tree: after the timed starts, so
        # that their writeback lands in none of them (the fetches that follow interleave
        # with their references).
        for run_dir in placed:
            self._far_copies(figures, run_dir)
        for rep in range(self.reps):
            landing = self.world.local_dir(f"many-files-{link.alias}-{rep}")
            ways = [
                (figures.fetch, partial(self._fetch, client, link, far_tree, landing / "rt")),
                (figures.fetch_tar, partial(self._tar_down, ssh, far_tree, landing / "tar")),
            ]
            for sample, way in ways[rep % 2 :] + ways[: rep % 2]:
                self._settle()
                began = time.perf_counter()
                way()
                sample.add(time.perf_counter() - began)
            shutil.rmtree(landing, ignore_errors=True)
        self._scp(figures, ssh, far_tree)
        return figures

    def _start(self, client: Any, link: Link, workdir: str) -> str:
        """A start with the tree as its code; the run directory (absolute, far side)."""
        self.serial += 1
        run_id = f"files-{self.serial:03d}"
        client.request("run/start", {
            "host": link.alias, "runId": run_id, "config": str(self.config), "gpus": 0,
            "workdir": workdir, "command": ["true"], "code": str(self.code),
        })  # fmt: skip
        return f"{self.world.workdir_abs}/{workdir.rsplit('/', 1)[1]}/{run_id}"

    def _settle(self) -> None:
        """Untimed, before each timed step (rtrain's and its reference alike): the writeback of
        what the steps before wrote ends here, so it lands in none of them. On this shared
        disk a step that follows 200 MB of writes otherwise pays up to a second of another's
        writeback."""
        self.world.far_side("sync")

    def _wait_for_fill(self, workdir: str) -> None:
        """Until no process fills the far input cache (each holds its lock while it does)."""
        lock = Path(self.world.workdir_abs) / workdir.rsplit("/", 1)[1] / ".cache" / FILL_LOCK
        if lock.exists():
            with open(lock) as held:
                fcntl.flock(held, fcntl.LOCK_EX)

    def _far_copies(self, figures: ManyFiles, far_run: str) -> None:
        """`cp -r` and `tar c | tar x` of a placed run directory on the far side, each into
        a new folder beside it, timed there: what copying the tree costs on that disk."""
        said = self.world.far_side(FAR_COPIES, far_run)
        times = dict(line.split() for line in said.splitlines() if line.count(" ") == 1)
        figures.far_cp.add(float(times["cp"]))
        figures.far_tar.add(float(times["tar"]))

    def _fetch(self, client: Any, link: Link, far_run: str, dest: Path) -> None:
        run_id = far_run.rsplit("/", 1)[1]
        workdir = f"{self.world.workdir}/{far_run.rsplit('/', 2)[1]}"
        done = client.request("run/fetch", {
            "host": link.alias, "runId": run_id, "workdir": workdir, "path": ".",
            "dest": str(dest),
        })  # fmt: skip
        assert done.files, "the fetch brought nothing"

    def _tar_up(self, ssh: PerCommandSsh, far_dir: str) -> None:
        q = shlex.quote(far_dir)
        tar = subprocess.Popen(["tar", "c", "-C", str(self.code), "."], stdout=subprocess.PIPE)
        try:
            subprocess.run(
                ssh.ssh(f"mkdir -p {q} && tar x -C {q}"), stdin=tar.stdout, check=True, timeout=3600
            )
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar.wait()

    def _tar_down(self, ssh: PerCommandSsh, far_run: str, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        far = subprocess.Popen(
            ssh.ssh(f"tar c -C {shlex.quote(far_run)} ."), stdout=subprocess.PIPE
        )
        try:
            subprocess.run(
                ["tar", "x", "-C", str(dest)], stdin=far.stdout, check=True, timeout=3600
            )
        finally:
            assert far.stdout is not None
            far.stdout.close()
            far.wait()

    def _scp(self, figures: ManyFiles, ssh: PerCommandSsh, far_run: str) -> None:
        share = 1 if figures.link.delay_ms is None else SCP_SHARE_DELAYED
        source = self.world.local_dir(f"many-files-scp-{figures.link.alias}")
        picked = sorted(self.code.rglob("*.bin"))[::share]
        for path in picked:
            target = source / path.relative_to(self.code)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        figures.scp_files = len(picked)
        far_dir = f"{far_run}-scp"
        argv = ssh.scp_to(source, far_dir)
        began = time.perf_counter()
        run_checked(argv[:1] + ["-r"] + argv[1:], timeout=3600)
        figures.scp.add(time.perf_counter() - began)
        shutil.rmtree(source, ignore_errors=True)
