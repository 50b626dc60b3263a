"""One real OpenSSH server on 127.0.0.1, owned by the test session.

sshd runs in the foreground (-D) as our child, so its pid is never lost. Stopping it ends the
listener only: like `systemctl restart ssh`, sessions already open live on, which is what a
"sshd restarted under a live ControlMaster" test needs. close() ends those sessions too.
"""

import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")
START_TIMEOUT_S = 10.0
PORT_ATTEMPTS = 5
# Listening ports come from below the kernel's range for outgoing connections: a server
# stopped and started again on its port (a restarted sshd) must find it free, and an
# outgoing connection of another test may take any port of that range while it is.
LOWEST_PORT = 10000
PORT_PICKS = 200


class SshdStartError(RuntimeError):
    pass


class Sshd:
    """An sshd with the shared base settings plus `settings` lines of its own."""

    def __init__(
        self,
        name: str,
        base: Path,
        host_key: Path,
        settings: Sequence[str],
        launcher: Sequence[str] = (),
    ) -> None:
        self.name = name
        # A command sshd runs under (it must exec sshd in the end, so the pid stays sshd's).
        self.launcher = list(launcher)
        self.config_path = base / f"{name}.sshd_config"
        self.log_path = base / f"{name}.log"
        self.pid_path = base / f"{name}.pid"
        self.host_key = host_key
        self.settings = list(settings)
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        # Session processes left running by stop(); ended by close(). (pid, start time)
        self._orphans: list[tuple[int, int]] = []

    def start(self) -> None:
        """Start on a free port the first time, on the same port after a stop()."""
        if self._process is not None:
            return
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        if self.port:
            self._launch()
            return
        for attempt in range(PORT_ATTEMPTS):
            self.port = free_port()
            try:
                self._launch()
                return
            except SshdStartError:
                # Another process took the port between our probe and sshd's bind.
                if attempt == PORT_ATTEMPTS - 1:
                    raise

    def stop(self, drop_sessions: bool = False) -> None:
        """End the listener; open sessions survive unless drop_sessions."""
        process = self._process
        if process is None:
            return
        sessions = session_processes(process.pid)
        if drop_sessions:
            _terminate(sessions)
        else:
            self._orphans.extend(sessions)
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._process = None

    def close(self) -> None:
        self.stop(drop_sessions=True)
        _terminate(self._orphans)
        self._orphans.clear()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _write_config(self) -> None:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.pid_path}",
            "AuthorizedKeysFile .ssh/authorized_keys",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin no",
            "PrintMotd no",
            "LogLevel VERBOSE",
            *self.settings,
        ]
        self.config_path.write_text("".join(f"{line}\n" for line in lines))

    def _launch(self) -> None:
        self._write_config()
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(
                [
                    *self.launcher,
                    str(SSHD),
                    "-D",
                    "-f",
                    str(self.config_path),
                    "-E",
                    str(self.log_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        ready_line = f"Server listening on 127.0.0.1 port {self.port}."
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            new_log = self._log_since(log_start)
            if ready_line in new_log:
                self._process = process
                return
            if process.poll() is not None:
                break
            time.sleep(0.01)
        if process.poll() is None:
            process.kill()
        process.wait()
        raise SshdStartError(
            f"sshd {self.name!r} did not start on port {self.port}:\n{self._log_since(log_start)}"
        )

    def _log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")


def free_port() -> int:
    """A port nothing listens on right now, outside the range of outgoing connections'
    own ports (where there is room below it; else one the kernel picks)."""
    below = _lowest_outgoing_port()
    if below - LOWEST_PORT >= 1000:
        for _ in range(PORT_PICKS):
            port = random.randrange(LOWEST_PORT, below)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        picked: int = probe.getsockname()[1]
        return picked


def _lowest_outgoing_port() -> int:
    """Where the kernel's range of ports for outgoing connections starts."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def session_processes(listener_pid: int) -> list[tuple[int, int]]:
    """The per-connection sshd processes the listener forked, as (pid, start time)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _read_stat(int(entry.name))
        if stat is not None and stat[0] == listener_pid:
            found.append((int(entry.name), stat[1]))
    return found


def _read_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) from /proc/PID/stat, or None when the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces; fields follow the last ")".
    fields = raw[raw.rfind(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _terminate(processes: list[tuple[int, int]]) -> None:
    for pid, started in processes:
        stat = _read_stat(pid)
        if stat is None or stat[1] != started:
            continue  # gone, or the pid now belongs to someone else
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
