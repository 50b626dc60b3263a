"""rtrain-ranks: torchrun under a relay that keeps the ranks' lines whole in train.log.

Shipped into a torchrun run's directory as `rtrain-ranks` and run with the run's python:

    PYTHON rtrain-ranks RUN_DIR LOG_DIR TORCHRUN_COMMAND...

torchrun runs with `--redirects=3 --log-dir=LOG_DIR`, so each rank writes its own
stdout.log and stderr.log; this relay copies every complete line of them to its own stdout
(the run's train.log) as `[rankN]: LINE`, N the worker's global rank (its RANK, as torch's
own lines number it; read from the worker's environment, else its local rank), one write
per batch of whole lines, so ranks that print at once never merge (with PYTHONUNBUFFERED a
print is two writes: the text, then its newline). A line torch already prefixed (its
excepthook writes `[rankN]: `) keeps its one prefix. torchrun's own lines (its warnings,
its failure summary) go to train.log directly.

When torchrun fails, the relay writes RUN_DIR/.rtrain/rank_failure: the rank that failed first in
time, as one line `RANK<TAB>EXIT<TAB>SIGNAL<TAB>PID<TAB>STDERR<TAB>ERROR_MESSAGE<TAB>TIME`
(`-` where empty; STDERR relative to RUN_DIR when inside it; TIME: the rank's last sign of
life, epoch seconds), which status.sh turns into the run's reason (and, across hosts, which
node failed first). It exits as torchrun did (the same code, or the same signal).

Standard library only, and no rtrain import: it runs on the far host.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from types import FrameType

POLL = 0.05  # seconds between looks at the ranks' files
HOLD = 2.0  # an unfinished line waits this long for its end before it is written as is
READ = 1 << 20  # bytes read from one file per look
TAIL = 256 * 1024  # bytes of train.log read for torchrun's failure summary
FAILURE_FILE = "rank_failure"
# In the run's `.rtrain/`: this node runs global rank 0 (across hosts, c10d numbers the nodes
# itself), so rank 0's lines, and the run's metrics, are in this node's train.log.
RANK0_FILE = "rank0"
PREFIXED = re.compile(rb"^\[rank\d+\]:")
SEGMENT = re.compile(rb"[^\r\n]*(?:\r\n|\n|\r)")
RANK_LINE = re.compile(r"^\s*rank\s*:\s*(\d+)")
# `rank : 3 (local_rank: 1)`: the rank's number on its own node names its folder here (the
# two differ on every node but the first of a run across hosts).
LOCAL_RANK = re.compile(r"\(local_rank:\s*(\d+)\)")
EXIT_LINE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)")
ERROR_FILE_LINE = re.compile(r"^\s*error_file\s*:\s*(.*?)\s*$")
CLOSING = re.compile(r"Sending process (\d+) closing signal")


class Follower:
    """One rank's stdout.log or stderr.log, read from where the last look stopped."""

    def __init__(self, path: str, rank: int) -> None:
        self.path = path
        self.rank = rank
        self.prefix = b"[rank%d]: " % rank
        self.offset = 0
        self.pending = b""
        self.pending_since = 0.0
        self.continued = False  # the last bytes written ended mid-line (held too long)
        self.after_cr = False  # the last segment ended with "\r" (a "\n" may follow)

    def pump(self, final: bool) -> bytes:
        """The whole lines (with their prefixes) that arrived since the last look."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(READ)
        except OSError:
            return b""
        self.offset += len(data)
        now = time.monotonic()
        if data and not self.pending:
            self.pending_since = now
        buffer = self.pending + data
        out: list[bytes] = []
        end = 0
        for match in SEGMENT.finditer(buffer):
            segment = match.group()
            end = match.end()
            if segment == b"\n" and self.after_cr:
                out.append(segment)  # the second half of a "\r\n"
            else:
                out.append(self._prefixed(segment))
            self.after_cr = segment.endswith(b"\r")
            self.continued = False
        self.pending = buffer[end:]
        if self.pending and (final or now - self.pending_since >= HOLD):
            # An unfinished line is written as it stands: at the end, or after a long wait.
            out.append(self._prefixed(self.pending) + (b"\n" if final else b""))
            self.continued = not final
            self.after_cr = False
            self.pending = b""
        return b"".join(out)

    def _prefixed(self, segment: bytes) -> bytes:
        if self.continued or PREFIXED.match(segment):
            return segment
        return self.prefix + segment


class Relay:
    def __init__(self, run_dir: str, log_dir: str) -> None:
        self.run_dir = run_dir
        self.log_dir = log_dir
        # torchrun's pid, once started: its workers' environment gives their global ranks.
        self.torchrun: int | None = None
        self.global_ranks: dict[int, int] = {}
        self.rank0_marked = False
        self.old = set(self._entries(log_dir))  # earlier attempts' folders: not ours
        self.followers: dict[str, Follower] = {}
        # local rank -> (attempt number, its folder) of the latest attempt seen
        self.rank_dirs: dict[int, tuple[int, str]] = {}

    @staticmethod
    def _entries(path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def discover(self) -> None:
        for run in self._entries(self.log_dir):
            if run in self.old:
                continue
            run_path = os.path.join(self.log_dir, run)
            for attempt in self._entries(run_path):
                number = attempt.removeprefix("attempt_")
                if not number.isdigit():
                    continue
                attempt_path = os.path.join(run_path, attempt)
                for rank in self._entries(attempt_path):
                    if not rank.isdigit():
                        continue
                    rank_path = os.path.join(attempt_path, rank)
                    if self.rank_dirs.get(int(rank), (-1, ""))[0] < int(number):
                        self.rank_dirs[int(rank)] = (int(number), rank_path)
                    for name in ("stdout.log", "stderr.log"):
                        path = os.path.join(rank_path, name)
                        if path not in self.followers and os.path.exists(path):
                            self.followers[path] = Follower(path, self._global(int(rank)))

    def _global(self, local: int) -> int:
        """The global rank of the worker with `local` rank (torch's own `[rankN]` lines
        number it so; on every node but the first of a run across hosts the two differ),
        from the workers' environment; the local rank where that cannot be read."""
        if local not in self.global_ranks and self.torchrun is not None:
            deadline = time.monotonic() + HOLD
            while True:
                found = worker_ranks(self.torchrun)
                self.global_ranks.update(found)
                if 0 in found.values():
                    self._mark_rank0()  # read from a worker's own RANK, never guessed
                if local in self.global_ranks or time.monotonic() > deadline:
                    break
                time.sleep(POLL)
            self.global_ranks.setdefault(local, local)  # asked once: a worker gone says no more
        return self.global_ranks.get(local, local)

    def _mark_rank0(self) -> None:
        """Say, in the run's private `.rtrain/`, that global rank 0 runs on this node."""
        own = os.path.join(self.run_dir, ".rtrain")
        if self.rank0_marked or not os.path.isdir(own):
            return  # a run launched by an older rtrain: its metrics stay node 0's
        try:
            with open(os.path.join(own, RANK0_FILE), "w", encoding="utf-8") as handle:
                handle.write("0\n")
            self.rank0_marked = True
        except OSError:
            pass

    def pump(self, final: bool = False) -> None:
        self.discover()
        for follower in self.followers.values():
            lines = follower.pump(final)
            while lines:
                try:
                    written = os.write(1, lines)
                except InterruptedError:
                    continue
                except OSError:
                    return  # train.log cannot take more: the ranks still run
                lines = lines[written:]

    def first_failure(self) -> str | None:
        """The rank_failure line for the rank that failed first, or None when torchrun's
        summary names no failed rank (torchrun itself failed)."""
        try:
            with open(os.path.join(self.run_dir, "train.log"), "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL))
                log = handle.read().decode("utf-8", "replace")
        except OSError:
            return None
        failures = summary_failures(log)
        if not failures:
            return None
        closed = set(CLOSING.findall(log))
        # Ranks torchrun itself took down after the first failure are not candidates.
        own = [f for f in failures if f["pid"] not in closed] or failures
        root = own[0]["rank"] if own[0].get("root") else None

        def order(failure: dict[str, str]) -> tuple[int, int, int]:
            rank = int(failure["rank"])
            last = self._last_sign_of_life(int(failure.get("local", rank)))
            return (last, 0 if failure["rank"] == root else 1, rank)

        first = min(own, key=order)
        rank = int(first["rank"])
        failed_at = self._last_sign_of_life(int(first.get("local", rank)))
        code = int(first["exit"])
        folder = self.rank_dirs.get(int(first.get("local", rank)), (0, ""))[1]
        stderr = os.path.join(folder, "stderr.log") if folder else ""
        if stderr.startswith(self.run_dir.rstrip("/") + "/"):
            stderr = stderr[len(self.run_dir.rstrip("/")) + 1 :]
        fields = [
            str(rank),
            str(code) if code >= 0 else "-",
            str(-code) if code < 0 else "-",
            first["pid"],
            stderr or "-",
            error_message(first.get("error_file", "")) or "-",
            f"{failed_at / 1e9:.3f}" if failed_at != sys.maxsize else "-",
        ]
        return "\t".join(" ".join(field.split()) or "-" for field in fields) + "\n"

    def _last_sign_of_life(self, rank: int) -> int:
        """When the rank last wrote anything (ns): a rank that raises writes its traceback
        as it dies, one that dies silently wrote last before it died, so the smallest of
        these among the failed ranks is the first failure; torchrun's own times are whole
        seconds."""
        folder = self.rank_dirs.get(rank, (0, ""))[1]
        latest = 0
        for name in ("stdout.log", "stderr.log", "error.json"):
            try:
                latest = max(latest, os.stat(os.path.join(folder, name)).st_mtime_ns)
            except OSError:
                pass
        return latest or sys.maxsize


def worker_ranks(parent: int) -> dict[int, int]:
    """LOCAL_RANK -> RANK of the live children of `parent` (torchrun's workers), read from
    their environment in /proc; empty where there is none to read."""
    found: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                if int(handle.read().rsplit(b") ", 1)[1].split()[1]) != parent:
                    continue
            with open(f"/proc/{name}/environ", "rb") as handle:
                items = handle.read().split(b"\0")
            env = dict(item.split(b"=", 1) for item in items if b"=" in item)
            found[int(env[b"LOCAL_RANK"])] = int(env[b"RANK"])
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return found


def summary_failures(log: str) -> list[dict[str, str]]:
    """torchrun's last failure summary in `log`: one dict per failed rank (rank, exit, pid,
    error_file), the root cause first and marked `root`."""
    start = log.rfind("Failures:")
    if start < 0:
        return []
    found: list[dict[str, str]] = []
    root = False
    current: dict[str, str] = {}
    for line in log[start:].splitlines():
        if line.startswith("Root Cause"):
            root = True
        elif re.match(r"^\[\d+\]:\s*$", line):
            current = {"root": "1"} if root else {}
            found.append(current)
        elif (match := RANK_LINE.match(line)) is not None:
            current["rank"] = match.group(1)
            local = LOCAL_RANK.search(line)
            current["local"] = local.group(1) if local is not None else match.group(1)
        elif (match := EXIT_LINE.match(line)) is not None:
            current["exit"], current["pid"] = match.group(1), match.group(2)
        elif (match := ERROR_FILE_LINE.match(line)) is not None:
            current["error_file"] = match.group(1)
        elif line.startswith("====") and root:
            break
    complete = [f for f in found if {"rank", "exit", "pid"} <= f.keys()]
    return sorted(complete, key=lambda f: 0 if f.get("root") else 1)


def error_message(path: str) -> str:
    """The message of a rank's error file (torch's `@record`), decoded."""
    if not path or path.startswith("<"):
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        message = data["message"]
        text = message["message"] if isinstance(message, dict) else message
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return text if isinstance(text, str) else ""


def own_files(run_dir: str) -> str:
    """Where rtrain keeps the run's bookkeeping (lib/own_files.sh's own_dir: BOOK): its `.rtrain/`,
    unless an older rtrain launched the run."""
    own = os.path.join(run_dir, ".rtrain")
    return own if os.path.isfile(os.path.join(own, "meta.json")) else run_dir


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        sys.stderr.write("usage: rtrain-ranks RUN_DIR LOG_DIR COMMAND...\n")
        return 2
    run_dir, log_dir, command = argv[1], argv[2], argv[3:]
    relay = Relay(run_dir, log_dir)
    child = subprocess.Popen(command)
    relay.torchrun = child.pid

    def forward(signum: int, _frame: FrameType | None) -> None:
        # stop.sh signals every process of the run itself; passing its signal on as well
        # would hit torchrun twice (rtrain-run's wrapper keeps the same rule).
        if not os.path.exists(os.path.join(own_files(run_dir), "stop_requested")):
            try:
                child.send_signal(signum)
            except OSError:
                pass

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), forward)
    while child.poll() is None:
        relay.pump()
        time.sleep(POLL)
    relay.pump(final=True)
    code = child.returncode
    if code != 0:
        line = relay.first_failure()
        if line is not None:
            path = os.path.join(own_files(run_dir), FAILURE_FILE)
            try:
                with open(path + ".tmp", "w", encoding="utf-8") as handle:
                    handle.write(line)
                os.replace(path + ".tmp", path)
            except OSError:
                pass  # the reason is then read from the log
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
