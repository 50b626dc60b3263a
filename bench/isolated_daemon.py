"""A daemon of the benchmark's own: private XDG directories under one short /tmp path.

Nothing of the user's own daemon, registry or config is touched, and stop() ends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rtrain.client.daemon_client import DaemonClient

START_TIMEOUT_S = 15.0
REPO = Path(__file__).resolve().parent.parent


class IsolatedDaemon:
    def __init__(
        self,
        root: Path,
        ssh_config: Path,
        poll_interval_s: float | None = None,
        module: str = "rtrain.daemon",
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.module = module
        self.runtime = root / "run"
        self.state = root / "state"
        self.config = root / "config"
        for directory in (self.runtime, self.state, self.config):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # What a CLI or daemon process of this benchmark sees: the isolated directories, the
        # test hosts' ssh config, and no auto-start (a second daemon would skew everything).
        self.env = {
            **os.environ,
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_STATE_HOME": str(self.state),
            "XDG_CONFIG_HOME": str(self.config),
            "RTRAIN_SSH_CONFIG": str(ssh_config),
            "RTRAIN_NO_SPAWN": "1",
            **(extra_env or {}),
        }
        self.env.pop("RTRAIN_SOCKET", None)
        if poll_interval_s is not None:
            self.env["RTRAIN_POLL_INTERVAL"] = str(poll_interval_s)
        self._process: subprocess.Popen[bytes] | None = None
        # The interpreter the daemon runs under (another install compares two versions).
        self.python = sys.executable

    @property
    def socket_path(self) -> Path:
        return self.runtime / "rtrain" / "rtrain.sock"

    @property
    def registry_path(self) -> Path:
        return self.state / "rtrain" / "registry.sqlite3"

    @property
    def pid(self) -> int:
        assert self._process is not None, "daemon not started"
        return self._process.pid

    def start(self) -> None:
        with open(self.root / "daemon.out", "ab") as out:
            self._process = subprocess.Popen(
                [self.python, "-m", self.module],
                env=self.env,
                cwd=REPO,  # so a module of the benchmark's own (`bench.…`) is found
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self.client().close()
                return
            except Exception:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"the benchmark daemon did not start; see {self.root / 'daemon.out'}"
                    ) from None
                time.sleep(0.05)

    def client(self) -> DaemonClient:
        # The benchmark's own process does not carry the daemon's settings (they are in
        # self.env, for the commands it runs): no notice that they differ.
        return DaemonClient.connect(
            spawn=False, socket_path=self.socket_path, timeout=600, tell=False
        )

    def stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
