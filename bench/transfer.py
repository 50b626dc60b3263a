"""Benchmark 2: moving a file through rtrain (sha256 verified at both ends) against scp.

Upload is `run/start` shipping the file as the dataset: the whole operation is timed (making
the run directory, the config, the launch), so rtrain's figure carries all its overheads.
Fetch is `run/fetch` of that file. scp runs twice: fresh, as a user types it (handshake
included), and over an open ControlMaster, which shows what the link itself carries.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.per_command_ssh import MuxMaster, PerCommandSsh
from bench.processes import CommandFailed, run_checked
from bench.sample import Sample
from bench.world import BenchWorld, Link

UP_RTRAIN, UP_SCP, UP_SCP_MUX = "rtrain upload", "scp upload", "scp upload, open master"
DOWN_RTRAIN, DOWN_SCP, DOWN_SCP_MUX = "rtrain fetch", "scp fetch", "scp fetch, open master"
UPLOADS = (UP_RTRAIN, UP_SCP, UP_SCP_MUX)
FETCHES = (DOWN_RTRAIN, DOWN_SCP, DOWN_SCP_MUX)


@dataclass
class LinkTransfer:
    link: Link
    size_bytes: int
    mb_per_s: dict[str, Sample] = field(default_factory=dict)
    # One sha256 pass over the file, here (as the daemon hashes) and on the far side (as its
    # scripts hash): the price of the checksums, measured on the direct link only.
    local_hash_s: Sample = field(default_factory=Sample)
    far_hash_s: Sample = field(default_factory=Sample)

    def sample(self, way: str) -> Sample:
        return self.mb_per_s.setdefault(way, Sample())


class TransferBench:
    def __init__(self, world: BenchWorld, size_bytes: int, reps: int, name: str = "xfer") -> None:
        """`name` keeps this bench's runs and folders apart from another one's in the same
        world (the large-file step runs it again)."""
        assert world.daemon is not None
        self.name = name
        self.world = world
        self.daemon = world.daemon
        self.size = size_bytes
        self.reps = reps
        inputs = world.local_dir(f"{name}-inputs")
        self.payload = inputs / "payload.bin"
        with open(self.payload, "wb") as out:
            left = size_bytes
            while left:
                block = os.urandom(min(left, 1 << 20))
                out.write(block)
                left -= len(block)
        self.config = inputs / "config.yaml"
        self.config.write_text("steps: 1\n")

    def run(self, links: list[Link]) -> list[LinkTransfer]:
        return [self._one_link(index, link) for index, link in enumerate(links)]

    def _one_link(self, index: int, link: Link) -> LinkTransfer:
        result = LinkTransfer(link, self.size)
        ssh = PerCommandSsh(self.world.ssh_config, link.alias)
        control = self.world.local_dir("cm") / f"{self.name[:4]}{index}"
        master = MuxMaster(self.world.ssh_config, link.alias, control)
        mux = ["-o", f"ControlPath={control}", "-o", "ControlMaster=no"]
        client = self.daemon.client()
        landing = self.world.local_dir(f"{self.name}-fetched-{index}")
        try:
            client.request("host/preflight", {"host": link.alias, "gpus": 0})
            if link.delay_ms is None:
                self._hash_costs(result, client, master, link.alias)
            for rep in range(self.reps):
                self._one_round(result, rep, client, ssh, mux, landing)
        finally:
            client.close()
            master.close()
        return result

    def _one_round(
        self,
        result: LinkTransfer,
        rep: int,
        client: Any,
        ssh: PerCommandSsh,
        mux: list[str],
        landing: Path,
    ) -> None:
        """Every way up, then every way down, in an order that rotates with `rep`."""
        # Fresh content each round: the host keeps inputs by sha256, and a payload it already
        # holds would ship no byte at all (that is measured apart, as a second start).
        with open(self.payload, "r+b") as payload:
            payload.write(os.urandom(16))
        alias = ssh.alias
        workdir = self.world.workdir_abs
        run_id = f"{self.name}-{alias}-{rep}"
        remote_file = f"{workdir}/{run_id}/{self.payload.name}"

        def rtrain_upload() -> None:
            client.request("run/start", {
                "host": alias, "runId": run_id, "config": str(self.config),
                "dataset": str(self.payload), "gpus": 0, "workdir": self.world.workdir,
                "command": ["true"],
            })  # fmt: skip

        def rtrain_fetch() -> None:
            fetched = client.request("run/fetch", {
                "host": alias, "runId": run_id, "path": self.payload.name,
                "dest": str(landing / "rtrain"),
            })  # fmt: skip
            if not all(f.verified for f in fetched.files) or fetched.total_bytes != self.size:
                raise CommandFailed("run/fetch did not verify the whole file")

        scp_up = ssh.scp_to(self.payload, f"{workdir}/scp-up-{alias}-{rep}.bin")
        scp_up_mux = scp_up[:1] + mux + scp_up[1:-1] + [scp_up[-1] + ".mux"]
        scp_down = ssh.scp_from(remote_file, landing / "scp.bin")
        # Into a file of its own: overwriting the plain scp's copy would hand it that copy's
        # pages, freed just then, which a fresh file does not get (see the method's notes).
        scp_down_mux = scp_down[:1] + mux + scp_down[1:-1] + [str(landing / "scp-mux.bin")]
        uploads: dict[str, Callable[[], object]] = {
            UP_RTRAIN: rtrain_upload,
            UP_SCP: lambda: run_checked(scp_up),
            UP_SCP_MUX: lambda: run_checked(scp_up_mux),
        }
        fetches: dict[str, Callable[[], object]] = {
            DOWN_RTRAIN: rtrain_fetch,
            DOWN_SCP: lambda: run_checked(scp_down),
            DOWN_SCP_MUX: lambda: run_checked(scp_down_mux),
        }
        for ways in (uploads, fetches):
            items = list(ways.items())
            shift = rep % len(items)
            for way, move in items[shift:] + items[:shift]:
                started = time.perf_counter()
                move()
                seconds = time.perf_counter() - started
                result.sample(way).add(self.size / 1e6 / seconds)
                _check_size(landing, way, self.size)
        # Keep the disks small: every copy of this round goes now.
        shutil.rmtree(landing, ignore_errors=True)
        landing.mkdir()
        self.world.far_side('rm -f -- "$1"/scp-up-* "$2"', workdir, remote_file)

    def _hash_costs(self, result: LinkTransfer, client: Any, master: MuxMaster, alias: str) -> None:
        run_id = f"{self.name}-hash-{alias}"
        client.request("run/start", {
            "host": alias, "runId": run_id, "config": str(self.config),
            "dataset": str(self.payload), "gpus": 0, "workdir": self.world.workdir,
            "command": ["true"],
        })  # fmt: skip
        remote_file = f"{self.world.workdir_abs}/{run_id}/{self.payload.name}"
        # The far side's hasher as its scripts pick it (lib/hashing.sh's sha256_of): openssl first.
        hasher = (
            "if openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; "
            "then openssl dgst -sha256 -r; else sha256sum; fi"
        )
        hash_far = master.true()[:-1] + [f"{{ {hasher}; }} < {shlex.quote(remote_file)}"]
        for _ in range(3):
            started = time.perf_counter()
            digest = hashlib.sha256()
            with open(self.payload, "rb") as source:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
            result.local_hash_s.add(time.perf_counter() - started)
            result.far_hash_s.add(run_checked(hash_far)[0])
        self.world.far_side('rm -f -- "$1"', remote_file)


def _check_size(landing: Path, way: str, size: int) -> None:
    """A fetch that landed short would flatter the figure: refuse it."""
    target = {
        DOWN_RTRAIN: "rtrain/payload.bin",
        DOWN_SCP: "scp.bin",
        DOWN_SCP_MUX: "scp-mux.bin",
    }
    if way in target:
        path = landing / target[way]
        if not path.exists() or path.stat().st_size != size:
            raise CommandFailed(f"{way}: {path} is missing or short")
