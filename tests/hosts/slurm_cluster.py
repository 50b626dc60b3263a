"""A real one-node Slurm cluster with accounting, started by the test session itself.

munged, MariaDB, slurmdbd, slurmctld and slurmd run as plain child processes (no systemd),
each on its own ports, under one directory that other users can traverse (the login user's
sbatch must reach the munge socket and slurm.conf). Fake GPUs are character devices made
with mknod and declared in gres.conf, so Slurm counts and hands them out like real ones.
"""

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.hosts.sshd import free_port

CLUSTER = "rtraintest"
PARTITION = "gpu"
START_TIMEOUT_S = 30.0
DB_PASSWORD_BYTES = 12
# Each cluster start takes job ids of its own, so an output file of an earlier instance is
# never mistaken for a new job's.
JOB_ID_SPAN = 100_000

SLURM_PACKAGES = "slurmctld slurmd slurm-client munge slurmdbd mariadb-server"
NEEDED_TOOLS = (
    "munged",
    "mariadbd",
    "mariadb-install-db",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sacctmgr",
    "sbatch",
    "squeue",
    "sacct",
    "scontrol",
)


class SlurmStartError(RuntimeError):
    pass


def missing_slurm_tools() -> list[str]:
    """What this machine lacks to run the cluster, in words; empty when nothing."""
    missing = [tool for tool in NEEDED_TOOLS if _which(tool) is None]
    if missing:
        return [f"{', '.join(missing)} (apt-get install {SLURM_PACKAGES})"]
    return []


def _which(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin")


class SlurmCluster:
    """One node (`nodename`) with `gpus` fake GPUs in partition `gpu`, accounting on."""

    def __init__(self, base: Path, gpus: int = 2, cpus: int = 16) -> None:
        self.base = base
        self.gpus = gpus
        self.cpus = cpus
        self.nodename = socket.gethostname()
        self.conf_dir = base / "etc"
        self.conf_path = self.conf_dir / "slurm.conf"
        self.munge_socket = base / "munge" / "munge.socket"
        self.first_job_id = 1000 + (int(time.time()) % 20_000) * JOB_ID_SPAN // 1000
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._ports = {name: free_port() for name in ("ctld", "slurmd", "dbd", "db")}
        self._db_password = secrets.token_hex(DB_PASSWORD_BYTES)

    # -- what tests use ----------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """Variables a Slurm client command needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf_path)}

    def command(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (as root) against this cluster."""
        return subprocess.run(
            list(argv),
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=60,
            check=check,
        )

    def log(self, name: str) -> str:
        path = self.base / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def restart_controller(self) -> None:
        """Stop slurmctld and start it again; running jobs go on (their state is saved)."""
        self._stop("slurmctld")
        self._start_slurmctld()

    def stop_accounting(self) -> None:
        """Stop slurmdbd: from now on sacct cannot answer."""
        self._stop("slurmdbd")

    def start_accounting(self) -> None:
        self._start_slurmdbd()

    def close(self) -> None:
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            self._stop(name)

    def __enter__(self) -> "SlurmCluster":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- start-up ----------------------------------------------------------------------

    def start(self) -> None:
        for sub in ("etc", "munge", "log", "state", "spool", "db", "dev", "run"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        # Login users run sbatch: they must reach slurm.conf and the munge socket.
        for path in (self.base, self.conf_dir, self.base / "dev"):
            path.chmod(0o755)
        self._start_munged()
        self._start_mariadb()
        self._write_config()
        self._start_slurmdbd()
        self.command("sacctmgr", "-i", "add", "cluster", CLUSTER)
        self._start_slurmctld()
        self._start_slurmd()
        self._wait_for_node()

    def _start_munged(self) -> None:
        munge_dir = self.base / "munge"
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        shutil.chown(munge_dir, "munge", "munge")
        shutil.chown(key, "munge", "munge")
        munge_dir.chmod(0o755)
        self._spawn(
            "munged",
            [
                "runuser",
                "-u",
                "munge",
                "--",
                _required("munged"),
                "--foreground",
                f"--key-file={key}",
                f"--socket={self.munge_socket}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={self.base / 'log' / 'munged.log'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
        )
        self._wait(lambda: self.munge_socket.exists(), "munged")

    def _start_mariadb(self) -> None:
        datadir = self.base / "db"
        self._install_db(datadir)
        db_socket = self.base / "run" / "mariadb.sock"
        self._spawn(
            "mariadbd",
            [
                _required("mariadbd"),
                "--no-defaults",
                f"--datadir={datadir}",
                f"--socket={db_socket}",
                f"--port={self._ports['db']}",
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-name-resolve",
                f"--pid-file={self.base / 'run' / 'mariadb.pid'}",
                f"--log-error={self.base / 'log' / 'mariadbd.log'}",
                "--innodb-buffer-pool-size=16M",
            ],
        )
        self._wait(lambda: db_socket.exists(), "mariadbd")
        password = self._db_password
        sql = (
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
        )
        subprocess.run(
            [
                _required("mariadb"),
                "--no-defaults",
                f"--socket={db_socket}",
                "-u",
                "root",
                "-e",
                sql,
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def _install_db(self, datadir: Path) -> None:
        """A fresh MariaDB data directory. Its bootstrap server once exited 1 in a CI run
        with four clusters starting at once, and passed alone: it is tried again on a clean
        directory, and a last failure carries what it printed."""
        argv = [
            _required("mariadb-install-db"),
            "--no-defaults",
            f"--datadir={datadir}",
            "--user=root",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ]
        for attempt in range(3):
            shutil.rmtree(datadir, ignore_errors=True)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                return
            printed = (done.stdout + done.stderr).strip()
            if attempt == 2:
                raise SlurmStartError(
                    f"mariadb-install-db exited {done.returncode}: {printed[-2000:]}"
                )

    def _write_config(self) -> None:
        logs, state, spool = self.base / "log", self.base / "state", self.base / "spool"
        auth = f"socket={self.munge_socket}"
        devices = []
        for index in range(self.gpus):
            device = self.base / "dev" / f"nvidia{index}"
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(195, index))
            devices.append(device)
        slurm_conf = [
            f"ClusterName={CLUSTER}",
            f"SlurmctldHost={self.nodename}(127.0.0.1)",
            f"SlurmctldPort={self._ports['ctld']}",
            f"SlurmdPort={self._ports['slurmd']}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo={auth}",
            "CredType=cred/munge",
            f"StateSaveLocation={state}",
            f"SlurmdSpoolDir={spool}",
            f"SlurmctldPidFile={self.base / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.base / 'run' / 'slurmd.pid'}",
            f"SlurmctldLogFile={logs / 'slurmctld.log'}",
            f"SlurmdLogFile={logs / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "SchedulerParameters=sched_interval=2",
            "KillWait=5",
            # Ended jobs leave squeue soon, so sacct is what answers for them, as on a busy
            # cluster.
            "MinJobAge=5",
            "InactiveLimit=0",
            f"FirstJobId={self.first_job_id}",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={self.nodename}",
            f"AccountingStoragePort={self._ports['dbd']}",
            f"AccountingStoragePass={auth}",
            "AccountingStorageTRES=gres/gpu",
            f"NodeName={self.nodename} NodeAddr=127.0.0.1 CPUs={self.cpus} "
            f"Gres=gpu:{self.gpus} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={self.nodename} Default=YES MaxTime=INFINITE "
            "State=UP",
        ]
        gres_conf = ["AutoDetect=off"] + [
            f"NodeName={self.nodename} Name=gpu File={device}" for device in devices
        ]
        dbd_conf = [
            "AuthType=auth/munge",
            f"AuthInfo={auth}",
            f"DbdHost={self.nodename}",
            f"DbdPort={self._ports['dbd']}",
            "SlurmUser=root",
            f"LogFile={logs / 'slurmdbd.log'}",
            f"PidFile={self.base / 'run' / 'slurmdbd.pid'}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={self._ports['db']}",
            "StorageUser=slurm",
            f"StoragePass={self._db_password}",
            "StorageLoc=slurm_acct_db",
        ]
        _write_lines(self.conf_path, slurm_conf, 0o644)
        _write_lines(self.conf_dir / "gres.conf", gres_conf, 0o644)
        _write_lines(self.conf_dir / "slurmdbd.conf", dbd_conf, 0o600)

    def _start_slurmdbd(self) -> None:
        # On a loaded machine slurmdbd's first queries of a MariaDB that has only just come up
        # can come back empty ("We should have gotten a result"), and slurmdbd exits at once:
        # started again, it finds its database ready. Any other failure, or a third, is raised.
        for attempt in range(3):
            self._spawn("slurmdbd", [_required("slurmdbd"), "-D"])
            try:
                self._wait_slurmdbd()
                return
            except SlurmStartError as error:
                if attempt == 2 or "Plugin init() callback failed" not in str(error):
                    raise
                self._processes.pop("slurmdbd").wait()

    def _wait_slurmdbd(self) -> None:
        self._wait(lambda: self._port_open(self._ports["dbd"]), "slurmdbd")
        # Listening is not answering: on a busy machine slurmdbd still sets up its tables,
        # and an `add cluster` sent then fails.
        self._wait(
            lambda: self.command("sacctmgr", "-n", "list", "cluster", check=False).returncode == 0,
            "slurmdbd (answering)",
        )

    def _start_slurmctld(self) -> None:
        self._spawn("slurmctld", [_required("slurmctld"), "-D", "-f", str(self.conf_path)])
        self._wait(
            lambda: self.command("scontrol", "ping", check=False).returncode == 0, "slurmctld"
        )

    def _start_slurmd(self) -> None:
        self._spawn(
            "slurmd", [_required("slurmd"), "-D", "-f", str(self.conf_path), "-N", self.nodename]
        )

    def _wait_for_node(self) -> None:
        def idle() -> bool:
            out = self.command("sinfo", "-h", "-N", "-o", "%T", check=False).stdout
            return out.strip().startswith("idle")

        self._wait(idle, "slurmd (node idle)")

    # -- processes ---------------------------------------------------------------------

    def _spawn(self, name: str, argv: Sequence[str]) -> None:
        with open(self.base / "log" / f"{name}.out", "ab") as out:
            self._processes[name] = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env={**os.environ, **self.env},
                start_new_session=True,
            )

    def _stop(self, name: str) -> None:
        process = self._processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [n for n, p in self._processes.items() if p.poll() is not None]
            if dead:
                raise SlurmStartError(
                    f"{', '.join(dead)} exited while waiting for {what}:\n"
                    + "\n".join(self._tail(n) for n in dead)
                )
            time.sleep(0.1)
        raise SlurmStartError(f"{what} did not come up within {START_TIMEOUT_S:.0f} s")

    def _tail(self, name: str) -> str:
        text = ""
        for suffix in ("out", "log"):
            path = self.base / "log" / f"{name}.{suffix}"
            if path.exists():
                text += path.read_text(errors="replace")[-2000:]
        return text

    @staticmethod
    def _port_open(port: int) -> bool:
        with socket.socket() as probe:
            probe.settimeout(0.2)
            return probe.connect_ex(("127.0.0.1", port)) == 0


def _required(tool: str) -> str:
    path = _which(tool)
    if path is None:
        raise SlurmStartError(f"{tool} is missing (apt-get install {SLURM_PACKAGES})")
    return path


def _write_lines(path: Path, lines: Sequence[str], mode: int) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))
    path.chmod(mode)
