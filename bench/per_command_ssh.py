"""What a user does without rtrain: a fresh `ssh`/`scp` per step, the commands typed by hand.

Every function returns argv lists for one alias of the test hosts' ssh config; nothing is
shared between two commands (no ControlMaster), which is the point of the comparison. The
floor, a bare `ssh host true` over an already open multiplexed connection, is here too.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import time
from pathlib import Path

MASTER_TIMEOUT_S = 30.0


class PerCommandSsh:
    def __init__(self, config: Path, alias: str, marker: str = "") -> None:
        self.config = config
        self.alias = alias
        # Put in the launched trainer's environment so the benchmark's cleanup can tell its
        # own processes from any other; it costs nothing measurable.
        self.marker = marker

    def ssh(self, remote_command: str) -> list[str]:
        return ["ssh", "-F", str(self.config), "-o", "BatchMode=yes", self.alias, remote_command]

    def scp_to(self, local: Path, remote_path: str) -> list[str]:
        return [
            "scp", "-F", str(self.config), "-q", "-o", "BatchMode=yes",
            str(local), f"{self.alias}:{remote_path}",
        ]  # fmt: skip

    def scp_from(self, remote_path: str, local: Path) -> list[str]:
        return [
            "scp", "-F", str(self.config), "-q", "-o", "BatchMode=yes",
            f"{self.alias}:{remote_path}", str(local),
        ]  # fmt: skip

    # -- the steps of a run, by hand -----------------------------------------------------

    def status(self, run_dir: str) -> list[str]:
        d = shlex.quote(run_dir)
        return self.ssh(
            # rtrain keeps its own files in .rtrain/ (issue 33); a run by hand keeps them beside.
            f"cat {d}/.rtrain/status 2>/dev/null || cat {d}/status 2>/dev/null || "
            f'{{ kill -0 "$(cat {d}/.rtrain/train.pid 2>/dev/null || cat {d}/train.pid)" '
            "2>/dev/null && echo running || echo lost; }"
        )

    def tail(self, run_dir: str) -> list[str]:
        return self.ssh(f"tail -n +1 -f {shlex.quote(run_dir)}/train.log")

    def make_dir(self, run_dir: str) -> list[str]:
        return self.ssh(f"mkdir -p {shlex.quote(run_dir)}")

    def launch(self, run_dir: str, command: str) -> list[str]:
        """Detach `command` in its own session; prints its pid (which leads that session)."""
        d = shlex.quote(run_dir)
        return self.ssh(
            f"cd {d} || exit 1; RTRAIN_BENCH={shlex.quote(self.marker)} "
            f"setsid nohup sh -c {shlex.quote(command)} "
            "</dev/null >train.log 2>&1 & echo $! | tee train.pid"
        )

    def stop(self, pid: int) -> list[str]:
        """TERM the run's session, then wait until its leader is gone: a confirmed stop.

        A zombie counts as gone: the init of some machines (this benchmark's among them)
        reaps orphans a second or more late, which a plain `kill -0` loop would wait out and
        so make the per-step way look slower than it is."""
        return self.ssh(
            f"kill -TERM -{pid}; n=0; "
            f'while state=$(ps -o stat= -p {pid}) && [ "${{state#Z}}" = "$state" ]; do '
            '[ "$n" -lt 300 ] || exit 1; n=$((n + 1)); sleep 0.1; done; echo stopped'
        )


class MuxMaster:
    """An OpenSSH ControlMaster of the benchmark's own, for the floor: `ssh host true` on it."""

    def __init__(self, config: Path, alias: str, control_path: Path) -> None:
        self.config = config
        self.alias = alias
        self.control_path = control_path
        self._process = subprocess.Popen(
            [
                "ssh", "-F", str(config), "-o", "BatchMode=yes", "-o", "ControlMaster=yes",
                "-o", f"ControlPath={control_path}", "-o", "ControlPersist=no", "-N", alias,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + MASTER_TIMEOUT_S
        while not control_path.is_socket():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"no ControlMaster for {alias}")
            time.sleep(0.01)

    def true(self) -> list[str]:
        return [
            "ssh", "-F", str(self.config), "-o", "BatchMode=yes", "-o", "ControlMaster=no",
            "-o", f"ControlPath={self.control_path}", self.alias, "true",
        ]  # fmt: skip

    def close(self) -> None:
        # `-O exit` first: a master told by SIGTERM alone was seen to linger behind the proxy.
        if self.control_path.is_socket():
            subprocess.run(
                ["ssh", "-F", str(self.config), "-o", f"ControlPath={self.control_path}",
                 "-O", "exit", self.alias],
                capture_output=True,
                timeout=10,
                check=False,
            )  # fmt: skip
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(3)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.control_path)
