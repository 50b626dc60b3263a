"""The run registry: one SQLite file (WAL) that survives any daemon death, `kill -9` included.

Every write is its own committed transaction, so what a client was told is on disk. A file
SQLite cannot read is moved aside, never deleted, and a fresh registry takes its place: runs
are found again by host + run id, as with a deleted registry.
"""

from __future__ import annotations

import builtins
import sqlite3
import time
from pathlib import Path

import msgspec

from rtrain.protocol.messages import (
    AfterRun,
    Attempt,
    Progress,
    RetryPolicy,
    RunInfo,
    RunNode,
    SyncTracker,
    TrackerSync,
    Transport,
)
from rtrain.protocol.run_states import ACTIVE_STATES

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    state TEXT NOT NULL,
    remote_dir TEXT,
    workdir TEXT,
    command TEXT,
    exit_code INTEGER,
    signal INTEGER,
    created_at REAL,
    started_at REAL,
    last_seen REAL,
    reason TEXT,
    env TEXT,
    setup TEXT,
    attempts TEXT,
    job_id TEXT,
    scheduler_state TEXT,
    max_duration INTEGER,
    stall_after INTEGER,
    on_stall TEXT,
    stalled_since REAL,
    stopped_by TEXT,
    ending TEXT,
    launcher TEXT,
    PRIMARY KEY (host, run_id)
);
CREATE INDEX IF NOT EXISTS runs_state ON runs (state);
-- Trackers whose files the daemon syncs for a run (`sync` at start), and how far it got.
CREATE TABLE IF NOT EXISTS tracker_syncs (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    tracker TEXT NOT NULL,
    synced_at REAL,
    error TEXT,
    summary TEXT,
    target TEXT,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, run_id, tracker)
);
-- Ports of this machine a run's processes reach on its host (`reverse` at start), and the
-- host's port they got: each attempt of the run gets them again, on the same far port.
CREATE TABLE IF NOT EXISTS run_reverse_ports (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    local_port INTEGER NOT NULL,
    remote_port INTEGER NOT NULL,
    PRIMARY KEY (host, run_id, local_port)
);
-- What the daemon does once a run completes (protocol AfterRun, as JSON), and how far it got.
CREATE TABLE IF NOT EXISTS after_run (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    plan TEXT NOT NULL,
    PRIMARY KEY (host, run_id)
);
-- Where an ended run's bar stopped and its latest values (protocol Progress and the latest
-- dict, as JSON), as its log said when last read: shown after a daemon restart, which
-- starts its metrics store empty.
CREATE TABLE IF NOT EXISTS run_metrics (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    progress TEXT,
    latest TEXT,
    PRIMARY KEY (host, run_id)
);
CREATE TABLE IF NOT EXISTS hosts (
    alias TEXT PRIMARY KEY,
    transport TEXT,
    last_error TEXT,
    updated REAL
);
-- Spans of time in which the monitor saw a host up: it answered every poll, none further
-- apart than the gap `saw_host` is given. `idle` sums the stretches with no run active.
CREATE TABLE IF NOT EXISTS host_spans (
    alias TEXT NOT NULL,
    opened REAL NOT NULL,
    last_seen REAL NOT NULL,
    idle REAL NOT NULL DEFAULT 0,
    idle_now INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS host_spans_alias ON host_spans (alias, last_seen);
-- A person's stop of a run across hosts that some nodes did not answer (node indices, as
-- JSON): the monitor finishes it on those nodes once they answer (docs/multinode.md).
CREATE TABLE IF NOT EXISTS pending_stops (
    host TEXT NOT NULL,
    run_id TEXT NOT NULL,
    nodes TEXT NOT NULL,
    grace REAL NOT NULL,
    force INTEGER NOT NULL,
    asked_at REAL NOT NULL,
    PRIMARY KEY (host, run_id)
);
CREATE TABLE IF NOT EXISTS host_prices (
    alias TEXT PRIMARY KEY,
    price_per_hour REAL NOT NULL
);
-- Runs started in a pool that no host could take yet (daemon/pools/), in the order they go:
-- priority first, then seq. `params`: the start as asked (StartParams JSON, no secrets);
-- `run`: the run as clients see it meanwhile (RunInfo JSON, host @POOL, state queued).
CREATE TABLE IF NOT EXISTS pool_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    pool TEXT NOT NULL,
    priority INTEGER NOT NULL,
    params TEXT NOT NULL,
    run TEXT NOT NULL
);
"""
_COLUMNS = (
    "host",
    "run_id",
    "state",
    "remote_dir",
    "workdir",
    "command",
    "exit_code",
    "signal",
    "created_at",
    "started_at",
    "last_seen",
    "reason",
    "env",
    "setup",
    "attempts",
    "job_id",
    "scheduler_state",
    "max_duration",
    "stall_after",
    "on_stall",
    "stalled_since",
    "stopped_by",
    "ending",
    "launcher",
    "nodes",
    "retry",
    "pool",
    "sweep",
    "params",
    "placement",
)
# Columns kept as JSON text, and the type each decodes to.
_JSON_COLUMNS: dict[str, type] = {
    "command": list[str],
    "env": dict[str, str],
    "attempts": list[Attempt],
    "nodes": list[RunNode],
    "retry": RetryPolicy,
    "params": dict[str, str],
}
# Columns added after the first release, with their types: a registry from then gains them
# on open (existing rows read NULL there, which every field takes as "not known").
_ADDED_COLUMNS = {
    "env": "TEXT",
    "setup": "TEXT",
    "attempts": "TEXT",
    "job_id": "TEXT",
    "scheduler_state": "TEXT",
    "max_duration": "INTEGER",
    "stall_after": "INTEGER",
    "on_stall": "TEXT",
    "stalled_since": "REAL",
    "stopped_by": "TEXT",
    "ending": "TEXT",
    "launcher": "TEXT",
    "nodes": "TEXT",
    "retry": "TEXT",
    "pool": "TEXT",
    "sweep": "TEXT",
    "params": "TEXT",
    "placement": "TEXT",
}
_Latest = dict[str, float | None]
# What a `tracker_syncs.tracker` cell may hold; a newer version's trackers are left alone.
_TRACKERS: dict[str, SyncTracker] = {"mlflow": "mlflow", "wandb": "wandb"}


class PendingStop(msgspec.Struct, frozen=True):
    """A person's stop of a run across hosts, not yet done on `nodes` (which did not answer)."""

    nodes: list[int]
    grace: float
    force: bool
    asked_at: float


# What a `hosts.transport` cell may hold; anything else (a file from a newer version) is unknown.
_TRANSPORTS: dict[str, Transport] = {"exec": "exec", "console": "console", "local": "local"}


class Registry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
            for column, kind in _ADDED_COLUMNS.items():
                if column not in present:
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
            # A file cut short opens fine and fails on the first page it lacks: look at all.
            (verdict,) = self._db.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise sqlite3.DatabaseError(verdict)
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def open_or_replace(cls, path: Path) -> tuple[Registry, str | None]:
        """The registry at `path`; when SQLite cannot read it, a fresh one, and the sentence
        saying where the damaged file went."""
        try:
            return cls(path), None
        except sqlite3.DatabaseError as error:
            aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            path.rename(aside)
            for suffix in ("-wal", "-shm"):
                companion = path.with_name(path.name + suffix)
                if companion.exists():
                    companion.rename(aside.with_name(aside.name + suffix))
            notice = (
                f"The run registry could not be read ({error}); it was moved to {aside} and "
                "a fresh one started. Runs are found again by host and run id: "
                "`rtrain status HOST RUN`."
            )
            return cls(path), notice

    def close(self) -> None:
        self._db.close()

    def upsert(self, run: RunInfo) -> None:
        values = [getattr(run, name) for name in _COLUMNS]
        for name in _JSON_COLUMNS:
            value = getattr(run, name)
            values[_COLUMNS.index(name)] = (
                None if value is None else msgspec.json.encode(value).decode()
            )
        placeholders = ", ".join("?" for _ in _COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:])
        self._db.execute(
            f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({placeholders}) "
            f"ON CONFLICT (host, run_id) DO UPDATE SET {updates}",
            values,
        )

    def delete(self, host: str, run_id: str) -> None:
        """Forget a run that never was (a start that failed before its launch)."""
        self._db.execute("DELETE FROM runs WHERE host = ? AND run_id = ?", (host, run_id))
        self._db.execute("DELETE FROM after_run WHERE host = ? AND run_id = ?", (host, run_id))
        self._db.execute("DELETE FROM run_metrics WHERE host = ? AND run_id = ?", (host, run_id))
        self._db.execute("DELETE FROM tracker_syncs WHERE host = ? AND run_id = ?", (host, run_id))
        self._db.execute(
            "DELETE FROM run_reverse_ports WHERE host = ? AND run_id = ?", (host, run_id)
        )
        self.end_pending_stop(host, run_id)

    def set_run_metrics(
        self, host: str, run_id: str, progress: Progress | None, latest: dict[str, float | None]
    ) -> None:
        """Keep what an ended run's log said last (its progress, its latest values)."""
        self._db.execute(
            "INSERT INTO run_metrics (host, run_id, progress, latest) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (host, run_id) DO UPDATE SET "
            "progress = excluded.progress, latest = excluded.latest",
            (
                host,
                run_id,
                None if progress is None else msgspec.json.encode(progress).decode(),
                msgspec.json.encode(latest).decode() if latest else None,
            ),
        )

    def run_metrics(
        self, host: str, run_id: str
    ) -> tuple[Progress | None, dict[str, float | None] | None]:
        """What `set_run_metrics` kept of the run: (progress, latest), each None if nothing."""
        row = self._db.execute(
            "SELECT progress, latest FROM run_metrics WHERE host = ? AND run_id = ?",
            (host, run_id),
        ).fetchone()
        if row is None:
            return None, None
        try:
            progress = None if row[0] is None else msgspec.json.decode(row[0], type=Progress)
            latest = None if row[1] is None else msgspec.json.decode(row[1], type=_Latest)
        except msgspec.DecodeError:
            return None, None  # a newer version's record this one cannot read
        return progress, latest

    def add_sync(self, host: str, run_id: str, tracker: SyncTracker, target: str | None) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO tracker_syncs (host, run_id, tracker, target) "
            "VALUES (?, ?, ?, ?)",
            (host, run_id, tracker, target),
        )

    def sync_target(self, host: str, run_id: str, tracker: SyncTracker) -> str | None:
        """Where a run's tracker files go here, as its start said."""
        row = self._db.execute(
            "SELECT target FROM tracker_syncs WHERE host = ? AND run_id = ? AND tracker = ?",
            (host, run_id, tracker),
        ).fetchone()
        return row[0] if row else None

    def record_sync(self, host: str, run_id: str, sync: TrackerSync, done: bool = False) -> None:
        """How the latest sync went; `done`: the run has ended and its last sync is made."""
        self._db.execute(
            "UPDATE tracker_syncs SET synced_at = ?, error = ?, summary = ?, done = ? "
            "WHERE host = ? AND run_id = ? AND tracker = ?",
            (sync.synced_at, sync.error, sync.summary, int(done), host, run_id, sync.tracker),
        )

    def syncs(
        self, pending_only: bool = False
    ) -> dict[tuple[str, str], builtins.list[TrackerSync]]:
        """Every run's syncs (only those still to be made: `pending_only`)."""
        found: dict[tuple[str, str], builtins.list[TrackerSync]] = {}
        where = " WHERE done = 0" if pending_only else ""
        for host, run_id, tracker, synced_at, error, summary, done in self._db.execute(
            "SELECT host, run_id, tracker, synced_at, error, summary, done FROM tracker_syncs"
            + where
        ):
            if tracker in _TRACKERS:
                found.setdefault((host, run_id), []).append(
                    TrackerSync(_TRACKERS[tracker], synced_at, error, summary, bool(done))
                )
        return found

    def syncs_of(self, host: str, run_id: str) -> builtins.list[TrackerSync]:
        return [
            TrackerSync(_TRACKERS[tracker], synced_at, error, summary, bool(done))
            for tracker, synced_at, error, summary, done in self._db.execute(
                "SELECT tracker, synced_at, error, summary, done FROM tracker_syncs "
                "WHERE host = ? AND run_id = ?",
                (host, run_id),
            )
            if tracker in _TRACKERS
        ]

    def set_reverse_ports(self, host: str, run_id: str, ports: dict[int, int]) -> None:
        """The run's reverse ports: this machine's port -> the host's."""
        self._db.executemany(
            "INSERT OR REPLACE INTO run_reverse_ports (host, run_id, local_port, remote_port) "
            "VALUES (?, ?, ?, ?)",
            [(host, run_id, here, far) for here, far in ports.items()],
        )

    def reverse_ports(self, host: str, run_id: str) -> dict[int, int]:
        """The ports of this machine the run's processes reach on its host, as its start
        asked, and the host's port each got."""
        return dict(
            self._db.execute(
                "SELECT local_port, remote_port FROM run_reverse_ports "
                "WHERE host = ? AND run_id = ? ORDER BY local_port",
                (host, run_id),
            ).fetchall()
        )

    def set_pending_stop(self, host: str, run_id: str, stop: PendingStop) -> None:
        """A stop that `stop.nodes` of the run did not answer: still to be done there."""
        self._db.execute(
            "INSERT INTO pending_stops (host, run_id, nodes, grace, force, asked_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (host, run_id) DO UPDATE SET "
            "nodes = excluded.nodes, grace = excluded.grace, force = excluded.force",
            (
                host,
                run_id,
                msgspec.json.encode(stop.nodes).decode(),
                stop.grace,
                int(stop.force),
                stop.asked_at,
            ),
        )

    def end_pending_stop(self, host: str, run_id: str) -> None:
        self._db.execute("DELETE FROM pending_stops WHERE host = ? AND run_id = ?", (host, run_id))

    def pending_stop(self, host: str, run_id: str) -> PendingStop | None:
        return self.pending_stops().get((host, run_id))

    def pending_stops(self) -> dict[tuple[str, str], PendingStop]:
        """Every stop still to be finished on some nodes, by (host, run id)."""
        found = {}
        for host, run_id, nodes, grace, force, asked_at in self._db.execute(
            "SELECT host, run_id, nodes, grace, force, asked_at FROM pending_stops"
        ):
            found[(host, run_id)] = PendingStop(
                nodes=msgspec.json.decode(nodes, type=list[int]),
                grace=float(grace),
                force=bool(force),
                asked_at=float(asked_at),
            )
        return found

    def set_after_run(self, host: str, run_id: str, plan: AfterRun) -> None:
        self._db.execute(
            "INSERT INTO after_run (host, run_id, plan) VALUES (?, ?, ?) "
            "ON CONFLICT (host, run_id) DO UPDATE SET plan = excluded.plan",
            (host, run_id, msgspec.json.encode(plan).decode()),
        )

    def unfinished_after_runs(self) -> builtins.list[tuple[str, str, AfterRun]]:
        """(host, run id, plan) of every plan not yet done or failed."""
        return [
            (host, run_id, plan)
            for (host, run_id), plan in self._after_runs().items()
            if plan.stage not in ("done", "failed")
        ]

    def _after_runs(self) -> dict[tuple[str, str], AfterRun]:
        plans = {}
        for host, run_id, text in self._db.execute("SELECT host, run_id, plan FROM after_run"):
            try:
                plans[(host, run_id)] = msgspec.json.decode(text, type=AfterRun)
            except msgspec.DecodeError:
                continue  # a newer version's plan this one cannot read: left alone
        return plans

    def get(self, host: str, run_id: str) -> RunInfo | None:
        rows = self._select("WHERE host = ? AND run_id = ?", (host, run_id))
        return rows[0] if rows else None

    def list(self, host: str | None = None, state: str | None = None) -> list[RunInfo]:
        clauses, args = [], []
        if host is not None:
            clauses.append("host = ?")
            args.append(host)
        if state is not None:
            clauses.append("state = ?")
            args.append(state)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        return self._select(where + " ORDER BY created_at DESC, run_id", tuple(args))

    def active(self) -> builtins.list[RunInfo]:
        marks = ", ".join("?" for _ in ACTIVE_STATES)
        return self._select(f"WHERE state IN ({marks})", ACTIVE_STATES)

    def hosts(self) -> builtins.list[str]:
        # A run recorded under `@POOL` (never placed: stopped or failed in its queue) is no
        # host's.
        rows = self._db.execute(
            "SELECT alias FROM hosts UNION SELECT DISTINCT host FROM runs "
            "WHERE host NOT LIKE '@%' UNION SELECT alias FROM host_prices ORDER BY 1"
        ).fetchall()
        return [row[0] for row in rows]

    def host_transport(self, alias: str) -> Transport | None:
        row = self._db.execute("SELECT transport FROM hosts WHERE alias = ?", (alias,)).fetchone()
        return _TRANSPORTS.get(row[0]) if row else None

    def host_error(self, alias: str) -> str | None:
        """Why the last attempt to reach `alias` failed; None once it succeeded."""
        row = self._db.execute("SELECT last_error FROM hosts WHERE alias = ?", (alias,)).fetchone()
        return row[0] if row else None

    def forget_host(self, alias: str) -> bool:
        """Drop `alias`'s connection record, its price and its uptime; False if there was
        none of them."""
        forgotten = 0
        for table in ("hosts", "host_prices", "host_spans"):
            forgotten += self._db.execute(f"DELETE FROM {table} WHERE alias = ?", (alias,)).rowcount
        return forgotten > 0

    def forget_unconnected(self, tried_before: float) -> None:
        """Forget the aliases that never connected (typos, hosts tried once), no run of
        theirs known, last tried before `tried_before` (epoch seconds)."""
        self._db.execute(
            "DELETE FROM hosts WHERE transport IS NULL AND updated < ? "
            "AND alias NOT IN (SELECT DISTINCT host FROM runs)",
            (tried_before,),
        )

    def set_host(self, alias: str, transport: str | None, last_error: str | None) -> None:
        self._db.execute(
            "INSERT INTO hosts (alias, transport, last_error, updated) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (alias) DO UPDATE SET transport = coalesce(excluded.transport, "
            "transport), last_error = excluded.last_error, updated = excluded.updated",
            (alias, transport, last_error, time.time()),
        )

    def saw_host(self, alias: str, at: float, idle: bool, gap: float) -> None:
        """The monitor heard from `alias` at `at` (epoch seconds), with no run active there
        when `idle`. Within `gap` seconds of the last time it did, the host's latest span of
        uptime grows to `at` (idle by as much, if it was idle then); else a new one opens."""
        row = self._db.execute(
            "SELECT rowid, last_seen, idle_now FROM host_spans WHERE alias = ? "
            "ORDER BY last_seen DESC LIMIT 1",
            (alias,),
        ).fetchone()
        if row is not None and 0 <= at - row[1] <= gap:
            grown = at - row[1] if row[2] else 0.0
            self._db.execute(
                "UPDATE host_spans SET last_seen = ?, idle = idle + ?, idle_now = ? "
                "WHERE rowid = ?",
                (at, grown, int(idle), row[0]),
            )
            return
        if row is not None and at < row[1]:
            return  # the clock went back: keep what was counted, count on from later looks
        self._db.execute(
            "INSERT INTO host_spans (alias, opened, last_seen, idle, idle_now) "
            "VALUES (?, ?, ?, 0, ?)",
            (alias, at, at, int(idle)),
        )

    def host_uptime(self, alias: str) -> tuple[float, float, float | None]:
        """Seconds the monitor saw `alias` up, how many of them idle, and when it last did."""
        up, idle, last = self._db.execute(
            "SELECT coalesce(sum(last_seen - opened), 0), coalesce(sum(idle), 0), "
            "max(last_seen) FROM host_spans WHERE alias = ?",
            (alias,),
        ).fetchone()
        return float(up), float(idle), last

    def host_price(self, alias: str) -> float | None:
        row = self._db.execute(
            "SELECT price_per_hour FROM host_prices WHERE alias = ?", (alias,)
        ).fetchone()
        return float(row[0]) if row else None

    def set_host_price(self, alias: str, price_per_hour: float | None) -> None:
        """What an hour of `alias` costs; None forgets it (config.toml's counts again)."""
        if price_per_hour is None:
            self._db.execute("DELETE FROM host_prices WHERE alias = ?", (alias,))
            return
        self._db.execute(
            "INSERT INTO host_prices (alias, price_per_hour) VALUES (?, ?) "
            "ON CONFLICT (alias) DO UPDATE SET price_per_hour = excluded.price_per_hour",
            (alias, price_per_hour),
        )

    # ---- the pools' queue ----------------------------------------------------------

    def enqueue(self, pool: str, priority: int, params: bytes, run: RunInfo) -> None:
        """Queue `run` (state queued, host `@POOL`) in `pool`, behind every run queued there."""
        self._db.execute(
            "INSERT INTO pool_queue (run_id, pool, priority, params, run) VALUES (?, ?, ?, ?, ?)",
            (run.run_id, pool, priority, params.decode(), msgspec.json.encode(run).decode()),
        )

    def queued(self, pool: str | None = None) -> builtins.list[tuple[RunInfo, bytes]]:
        """The runs queued (in `pool`, or in any), first to go first, each with its start."""
        where, args = ("WHERE pool = ?", (pool,)) if pool is not None else ("", ())
        rows = self._db.execute(
            f"SELECT run, params FROM pool_queue {where} ORDER BY priority DESC, seq", args
        ).fetchall()
        return [(msgspec.json.decode(run, type=RunInfo), params.encode()) for run, params in rows]

    def queued_run(self, run_id: str) -> RunInfo | None:
        row = self._db.execute("SELECT run FROM pool_queue WHERE run_id = ?", (run_id,)).fetchone()
        return msgspec.json.decode(row[0], type=RunInfo) if row else None

    def requeue(self, run: RunInfo) -> None:
        """A queued run's new reason (what it waits for now); its place stays."""
        self._db.execute(
            "UPDATE pool_queue SET run = ? WHERE run_id = ?",
            (msgspec.json.encode(run).decode(), run.run_id),
        )

    def dequeue(self, run_id: str) -> bool:
        """Take a run out of its queue (placed, stopped, removed); False if it was not there."""
        return self._db.execute("DELETE FROM pool_queue WHERE run_id = ?", (run_id,)).rowcount > 0

    def _select(self, tail: str, args: tuple[object, ...]) -> builtins.list[RunInfo]:
        cursor = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs {tail}", args)
        plans = self._after_runs()
        runs = []
        for row in cursor.fetchall():
            fields = dict(zip(_COLUMNS, row, strict=True))
            for name, kind in _JSON_COLUMNS.items():
                text = fields.pop(name)
                if text is not None:
                    fields[name] = msgspec.json.decode(text, type=kind)
            if fields["remote_dir"]:
                fields["log_path"] = f"{fields['remote_dir']}/train.log"
            fields["after"] = plans.get((fields["host"], fields["run_id"]))
            runs.append(RunInfo(**fields))
        return runs
