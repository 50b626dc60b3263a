"""docs/performance.md, written from one run's figures (and printed as the suite goes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.big_file import BigFile
from bench.command_start import FLOOR as START_FLOOR
from bench.command_start import CommandStart
from bench.many_files import ManyFiles
from bench.operation_latency import CLI, CLIENT, FLOOR, OPERATIONS, PER_STEP, SCRIPT, LinkLatency
from bench.results import ConsoleFigures, Results
from bench.rpc_core import PYGLS, RTRAIN, RpcFigures
from bench.sample import Sample, ratio
from bench.scale import ScaleFigures
from bench.targets import Verdict, verdicts
from bench.transfer import (
    DOWN_RTRAIN,
    DOWN_SCP,
    DOWN_SCP_MUX,
    UP_RTRAIN,
    UP_SCP,
    UP_SCP_MUX,
    LinkTransfer,
)
from bench.warm_start import warm_table

SPREAD_NOTE = "Median (interquartile range)"


# The figures of bench/tree_transfer.py, as it last wrote them.
# Written by bench/tree_transfer.py when run on its own; the suite's page has its own rows.
MANY_FILES = Path(__file__).resolve().parent.parent / "docs" / "perf" / "many_files.md"


def ms(sample: Sample | None) -> str:
    if sample is None or not sample.values:
        return "-"
    low, high = sample.spread
    return f"{sample.median * 1000:.0f} ({low * 1000:.0f}–{high * 1000:.0f})"


def plain(sample: Sample | None, digits: int = 1) -> str:
    if sample is None or not sample.values:
        return "-"
    low, high = sample.spread
    return f"{sample.median:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# -- one table per benchmark -----------------------------------------------------------------


def latency_table(latency: list[LinkLatency]) -> str:
    rows = []
    for operation in OPERATIONS:
        for entry in latency:
            ways = entry.samples.get(operation, {})
            if not ways:
                continue
            per_step = ways.get(PER_STEP)
            rows.append(
                [
                    operation,
                    entry.link.label,
                    ms(ways.get(CLI)),
                    ms(ways.get(CLIENT)),
                    ms(ways.get(SCRIPT)),
                    ms(ways.get(FLOOR)),
                    ms(per_step),
                    _times(per_step, ways.get(CLI)),
                    _times(per_step, ways.get(CLIENT)),
                ]
            )
    return table(
        [
            "operation",
            "link",
            "`rtrain` command, ms",
            "open client, ms",
            "its far-side script on a master, ms",
            "floor: `ssh true` on a master, ms",
            "ssh per step, ms",
            "per step ÷ command",
            "per step ÷ client",
        ],
        rows,
    )


def _times(slower: Sample | None, faster: Sample | None) -> str:
    if slower is None or faster is None or not slower.values or not faster.values:
        return "-"
    return f"{ratio(slower, faster):.1f}x"


def transfer_table(transfer: list[LinkTransfer]) -> str:
    rows = []
    for entry in transfer:
        rates = entry.mb_per_s
        rows.append(
            [
                entry.link.label,
                plain(rates.get(UP_RTRAIN)),
                plain(rates.get(UP_SCP)),
                plain(rates.get(UP_SCP_MUX)),
                f"{ratio(rates[UP_RTRAIN], rates[UP_SCP]):.0%}",
                plain(rates.get(DOWN_RTRAIN)),
                plain(rates.get(DOWN_SCP)),
                plain(rates.get(DOWN_SCP_MUX)),
                f"{ratio(rates[DOWN_RTRAIN], rates[DOWN_SCP]):.0%}",
            ]
        )
    return table(
        [
            "link",
            "rtrain upload",
            "scp upload",
            "scp upload, open master",
            "rtrain ÷ scp",
            "rtrain fetch",
            "scp fetch",
            "scp fetch, open master",
            "rtrain ÷ scp",
        ],
        rows,
    )


def console_section(console: ConsoleFigures | None, error: str | None) -> str:
    if console is None:
        why = error or "`bench/console_transfer.py` was not there when this suite ran"
        return (
            "**Gap: no console transport figures in this run** "
            f"({why}). The console transport's own benchmark, `bench/console_transfer.py`, "
            "measures 50 MB both ways through the console-only gateway; once it exists, "
            "`run_all.py` runs it and its table appears here."
        )
    intro = (
        "Measured by `bench/console_transfer.py`, which this suite runs: the test hosts' "
        "console-only gateway (no exec channel, no scp, no sftp; one PTY shell, files as "
        "checksummed chunks), against scp to the plain host, on loopback.\n\n"
    )
    if console.rows:
        header = list(console.rows[0])
        rows = [[str(row.get(key, "")) for key in header] for row in console.rows]
        return intro + table(header, rows)
    return intro + "```\n" + console.text.strip() + "\n```"


def rpc_table(rpc: list[RpcFigures]) -> str:
    by_key = {(figures.server, figures.clients): figures for figures in rpc}
    rows = []
    for clients in sorted({figures.clients for figures in rpc}):
        mine, theirs = by_key[(RTRAIN, clients)], by_key[(PYGLS, clients)]
        rows.append(
            [
                str(clients),
                plain(mine.per_second, 0),
                plain(mine.p50_ms, 2),
                plain(mine.p99_ms, 2),
                plain(theirs.per_second, 0),
                plain(theirs.p50_ms, 2),
                plain(theirs.p99_ms, 2),
                f"{ratio(mine.per_second, theirs.per_second):.1f}x",
            ]
        )
    return table(
        [
            "clients",
            "rtrain req/s",
            "rtrain p50, ms",
            "rtrain p99, ms",
            "pygls req/s",
            "pygls p50, ms",
            "pygls p99, ms",
            "rtrain ÷ pygls (req/s)",
        ],
        rows,
    )


def start_table(start: CommandStart) -> str:
    floor = start.seconds.get(START_FLOOR)
    rows = []
    for name, sample in start.seconds.items():
        above = (
            f"{(sample.median - floor.median) * 1000:+.0f}"
            if floor is not None and name != START_FLOOR
            else "-"
        )
        rows.append([f"`{name}`" if name != START_FLOOR else name, ms(sample), above])
    return table(["command", "wall time, ms", "above the bare interpreter, ms"], rows)


def scale_table(scale: ScaleFigures) -> str:
    per_host = scale.runs // scale.hosts
    rows = [
        [
            "remote commands per host per poll round",
            f"{scale.commands_per_host_round:.2f}",
            f"{per_host} (one per run; computed, not run)",
        ],
        [
            "of which the monitor's status commands (`Monitor.polls`)",
            f"{scale.polls_per_host_round:.2f}",
            "-",
        ],
        [
            "sessions the far sshd started, per host per round (its own log)",
            f"{scale.sshd_sessions_per_host_round:.2f}",
            f"{per_host} fresh connections",
        ],
        ["one poll round, all hosts at once (last round)", f"{scale.last_round_s:.2f} s", "-"],
        ["daemon CPU while idle-polling", f"{scale.daemon_cpu_percent:.1f}% of one core", "-"],
        [
            "its ssh clients that ended (one per command on a channel of its own)",
            f"{scale.ssh_clients_cpu_percent:.1f}%",
            "-",
        ],
        [
            "its lasting ssh clients (per host: the ControlMaster and its shells)",
            f"{scale.masters_cpu_percent:.1f}%",
            "-",
        ],
        ["daemon resident memory", f"{scale.rss_mb:.0f} MB (peak {scale.peak_rss_mb:.0f} MB)", "-"],
        [
            "`daemon/info` every 20 ms through a poll period: median / p99 / worst",
            _latency_spread(scale.info_during_poll_s),
            "-",
        ],
        ["`runs/list` of every run, open client", f"{ms(scale.runs_list_client_s)} ms", "-"],
        ["`rtrain runs --json`, whole command", f"{ms(scale.runs_list_command_s)} ms", "-"],
    ]
    return table(["measure", "rtrain", "one ssh per run instead"], rows)


def _latency_spread(sample: Sample) -> str:
    if not sample.values:
        return "-"
    return (
        f"{sample.median * 1000:.1f} / {sample.quantile(0.99) * 1000:.1f} / "
        f"{max(sample.values) * 1000:.0f} ms"
    )


def verdict_table(found: list[Verdict]) -> str:
    marks = {True: "holds", False: "**missed**", None: "not measured"}
    return table(
        ["target", "this run", "verdict"],
        [[verdict.target, verdict.figure, marks[verdict.holds]] for verdict in found],
    )


# -- the whole page ----------------------------------------------------------------------


def render(results: Results, plots: dict[str, str], commentary: dict[str, str]) -> str:
    settings = results.settings
    machine = results.machine
    kind = (
        "a **quick smoke run** (few repetitions; not the figures to quote)"
        if results.quick
        else "a full run"
    )
    minutes = sum(results.seconds.values()) / 60
    parts = [
        "# Performance",
        "",
        "<!-- Written by `python bench/run_all.py`; edit bench/report.py, not this file. -->",
        "",
        "rtrain exists to make remote training feel local: an answer about a run should "
        "come back in about one network round trip, and a file should move as fast as the "
        "link allows, checksums included. This page shows it side by side with what a user "
        "would do instead, measured in one run of the benchmark suite: "
        f"{kind} on {machine['date']}, which took {minutes:.1f} minutes. "
        "Every number below is one that run printed.",
        "",
        "## Targets",
        "",
        verdict_table(verdicts(results)),
        "",
        commentary.get("targets", ""),
        "",
        "## Machine",
        "",
        table(["", ""], [[key, value] for key, value in machine.items() if key != "load"]),
        "",
        f"Load average (1 / 5 / 15 min) at the start: {machine['load']}; at the end: "
        f"{results.load_after}. Other work on the machine makes absolute figures noisier "
        "than on an idle one; the comparisons much less so, because both sides of each one "
        "were measured interleaved.",
        "",
        "## Method",
        "",
        _method(settings),
        "",
    ]
    sections = [
        ("1. Operation latency", "latency", _latency_body),
        ("2. Transfer", "transfer", _transfer_body),
        ("3. RPC core", "rpc", _rpc_body),
        ("4. Start-up", "start", _start_body),
        ("5. Scale", "scale", _scale_body),
        ("6. Many small files", "files", _files_body),
        ("7. A start on a warm host", "warm", _warm_body),
        ("8. One large file", "big_file", lambda results, _plots: _big_file_section(results)),
    ]
    for title, key, body in sections:
        parts += [f"## {title}", ""]
        if getattr(results, key, None) is None:
            why = results.errors.get(key, "not selected (`--only`)")
            parts += [f"**Not measured in this run:** {why}", ""]
        else:
            parts += [body(results, plots), ""]
        if commentary.get(key):
            parts += [commentary[key], ""]
    if commentary.get("limits"):
        parts += ["## What limits these figures", "", commentary["limits"], ""]
    parts += [
        "## Reproducing",
        "",
        "```",
        "pip install pygls matplotlib      # bench-only; run_all.py installs them if missing",
        "sudo python bench/run_all.py      # root: the test hosts create users and run sshd",
        "python bench/run_all.py --quick   # a smoke run, written to a temporary directory",
        "```",
        "",
        "The suite never runs as part of the tests. It contacts only 127.0.0.1, uses a daemon "
        "of its own (temporary XDG directories) and stops it, its runs and its sshds at the "
        "end.",
        "",
    ]
    return "\n".join(parts)


def _method(settings: dict[str, Any]) -> str:
    return "\n".join(
        [
            "- **Far host**: the suite's own OpenSSH server on 127.0.0.1 (tests/hosts), "
            "reached directly and through a delay proxy (tests/hosts/proxy.py, run in a "
            "process of its own) that delivers every chunk after a one-way delay of "
            f"{', '.join(f'{d:g}' for d in settings['delays_ms'])} ms, so a round trip "
            "costs twice that. The kernel here has no netem; the proxy is the WAN.",
            "- **rtrain**: a daemon of the suite's own, already running and already "
            "connected to the host (warm), reached two ways: the `rtrain` command, a new "
            "process per call as a user's shell runs it, and a client on an open connection "
            "(what the VS Code extension and a Python loop do).",
            "- **ssh per step**: what a user does without rtrain: a fresh `ssh` or `scp` per "
            "step, no ControlMaster (`ssh host 'cat RUN/status || kill -0 $(cat RUN/train.pid)'`, "
            "`ssh host tail -f RUN/train.log`, `ssh host mkdir` + `scp` config + `scp` "
            "dataset + `ssh host 'setsid nohup … &'`, `ssh host 'kill -TERM -PID; wait until "
            "gone'`). That last loop counts a zombie as gone: this machine's init reaps "
            "orphans a second or more late, which a plain `kill -0` loop would wait out.",
            "- **The cipher**: rtrain's ControlMaster asks for AES-GCM first where the CPU "
            "has AES instructions and the ssh config names no ciphers "
            "(daemon/ssh/cipher_order.py; this machine's CPU has them). Every other way here "
            "(scp, `tar | ssh`, the bench's own ControlMaster) runs ssh as typed, with its "
            "default order (chacha20-poly1305 first): what a user gets without rtrain. One "
            "ssh stream on this loopback moved about 420 MB/s with chacha20-poly1305 and "
            "600-790 MB/s with AES-GCM, so on the direct link part of rtrain's lead or "
            "catch-up is the cipher; through a delayed link the window, not the cipher, "
            "sets the rate.",
            "- **floor**: `ssh host true` over an open ControlMaster: one remote command on "
            "an open connection, below which no tool can answer about a remote run without "
            "already knowing the answer.",
            f"- **Repetitions**: {settings['fast_reps']} per way for status and tail, "
            f"{settings['slow_reps']} for start and stop (after one untimed warm-up round), "
            f"{settings['transfer_reps']} per way for transfers of "
            f"{settings['transfer_mb']} MB, {settings['rpc_rounds']} rounds of "
            f"{settings['rpc_seconds']} s per RPC figure, {settings['start_reps']} per "
            "start-up command. Each figure is the median, with the interquartile range "
            "(the middle half of the runs) in parentheses. The ways are interleaved and "
            "their order rotates every repetition, so a noisy moment on the machine hits "
            "all of them alike; every ratio is between medians of the same run.",
        ]
    )


def _latency_body(results: Results, plots: dict[str, str]) -> str:
    assert results.latency is not None
    return "\n".join(
        [
            "Status of a running run; tail until its first log line is printed; start until "
            "the trainer runs (a 1 MB dataset and a config shipped, sha256-checked by rtrain, "
            "not by the per-step way); stop until every process of the run is confirmed "
            f"gone. Times in ms, {SPREAD_NOTE.lower()}.",
            "",
            latency_table(results.latency),
            "",
            f"![latency against one-way delay]({plots.get('latency', '')})",
        ]
    )


def _transfer_body(results: Results, plots: dict[str, str]) -> str:
    assert results.transfer is not None
    size = results.settings["transfer_mb"]
    lines = [
        f"{size} MB of random bytes. rtrain's upload is the whole `run/start` that ships "
        "it as the dataset (run directory, config, launch included), hashed before it "
        "leaves and again by the far side as it writes, kept only when the two agree; its "
        "fetch is `run/fetch`, hashed by the far side as it sends and here as it arrives. "
        "scp checks nothing. MB/s, "
        f"{SPREAD_NOTE.lower()}; the ratios are rtrain against plain scp as a user types it.",
        "",
        transfer_table(results.transfer),
        "",
    ]
    lines += [
        "### Console transport",
        "",
        console_section(results.console, results.errors.get("console")),
        "",
        f"![throughput]({plots.get('throughput', '')})",
    ]
    return "\n".join(lines)


def _rpc_body(results: Results, plots: dict[str, str]) -> str:
    assert results.rpc is not None
    return "\n".join(
        [
            "`daemon/info` (no I/O behind it) over the Unix socket, each client sending its "
            "next request as soon as the answer arrived. The comparison is pygls "
            "(LanguageServer, one per connection, all in one process and event loop, as "
            "rtrain serves its clients) answering a `daemon/info` with the same fields on a "
            "Unix socket. One load generator (bench/rpc_load.py) drives both. "
            f"{SPREAD_NOTE} over rounds.",
            "",
            rpc_table(results.rpc),
            "",
            f"![RPC requests per second]({plots.get('rpc', '')})",
        ]
    )


def _start_body(results: Results, plots: dict[str, str]) -> str:
    assert results.start is not None
    return "\n".join(
        [
            "Each command a fresh process, as a shell runs it (the installed console "
            "script itself, not a shim in front of it), against the warm daemon. "
            f"{SPREAD_NOTE}.",
            "",
            start_table(results.start),
        ]
    )


def files_table(files: list[ManyFiles]) -> str:
    rows = []
    for entry in files:
        scp_note = "" if entry.scp_files == entry.files else f" ({entry.scp_files} files)"
        rows.append(
            [
                entry.link.label,
                f"{entry.files} files, {entry.megabytes:.0f} MB",
                plain(entry.ship, 2),
                plain(entry.ship_tar, 2),
                f"{ratio(entry.ship, entry.ship_tar):.2f}x",
                plain(entry.again, 2),
                f"{plain(entry.far_cp, 2)} / {plain(entry.far_tar, 2)}",
                plain(entry.one_changed, 2),
                plain(entry.fetch, 2),
                plain(entry.fetch_tar, 2),
                f"{ratio(entry.fetch, entry.fetch_tar):.2f}x",
                plain(entry.scp, 1) + scp_note,
            ]
        )
    return table(
        [
            "link",
            "tree",
            "ship cold, s",
            "tar c \\| ssh tar x, s",
            "ship ÷ tar",
            "same code again, s",
            "far side's own cp -r / tar c \\| tar x of it, s",
            "one file changed, s",
            "fetch, s",
            "ssh tar c \\| tar x, s",
            "fetch ÷ tar",
            "scp -r (up), s",
        ],
        rows,
    )


def _big_file_section(results: Results) -> str:
    assert results.big_file is not None
    return big_file_body(results.big_file)


def big_file_body(big: BigFile) -> str:
    lines = [
        f"One file of {big.size_bytes / 1e6:.0f} MB of random bytes, measured by "
        "bench/big_file.py: the transfer rows above at this size (MB/s; the ratios are "
        "rtrain against plain scp), then a fetch cut by Ctrl-C at half and fetched again.",
        "",
        transfer_table(big.transfer),
        "",
    ]
    cut = big.cut
    if cut is None:
        lines.append("**Not measured in this run:** the cut fetch.")
    else:
        lines.append(
            f"**Fetch cut at {cut.cut_at_bytes / cut.size_bytes:.0%}** (Ctrl-C), then "
            f"fetched again: the second fetch moved {cut.sent_again_bytes / 1e6:.0f} MB, "
            f"{cut.moved_again:.0%} of the file, in {cut.again_s:.1f} s."
        )
    return "\n".join(lines)


def _warm_body(results: Results, plots: dict[str, str]) -> str:
    assert results.warm is not None
    return "\n".join(
        [
            "`run/start` through the API to its answer that the run is running, on a host "
            "whose connection is open and whose input cache holds the inputs (a config and "
            "a 4 MB dataset) from an earlier start; measured by bench/warm_start.py, which "
            "counts the far calls each start makes and the bytes each sends (script text "
            "and stdin). The transfer lease runs beside the claim; the two cache_place calls "
            f"(the inputs and rtrain's own files) beside each other. {SPREAD_NOTE}.",
            "",
            warm_table(results.warm),
        ]
    )


def _files_body(results: Results, plots: dict[str, str]) -> str:
    assert results.files is not None
    return "\n".join(
        [
            "A code directory of small files of random bytes (4-64 KB, in 30 folders), "
            "measured by bench/many_files.py. **Ship cold**: `run/start` of `true` with the "
            "tree as its code, into a work directory whose input cache is empty, every file "
            "verified by its sha256 before it is placed (the time includes the launch); "
            "against `tar c | ssh host tar x` (nothing verified). **Same code again**: the "
            "same start once more, nothing to send (every file placed from the host's cache "
            "as the run's own copy); beside it, the far side's own `cp -r` and "
            "`tar c | tar x` of the run directory it placed, timed there (no ssh): what the "
            "copy alone costs on that disk. **One file changed**: the same with one file "
            "rewritten. "
            "**Fetch**: `run/fetch` of the cold start's run directory into an empty folder, "
            "every file verified; against `ssh host tar c | tar x`. **scp -r**: the tree "
            "up, as a user types it; through the proxy it pays round trips per file (minutes "
            "for the whole tree), so there it copies one file in ten and the cell says how "
            "many. Before each timed step, rtrain's and its reference's alike, the disk's "
            "writeback of the steps before is let finish (an untimed `sync`), and after a "
            "cold ship the host's filling of its cache: on this shared disk a step that "
            "follows 200 MB of writes otherwise pays up to a second of their writeback. "
            f"{SPREAD_NOTE}.",
            "",
            files_table(results.files),
        ]
    )


def _scale_body(results: Results, plots: dict[str, str]) -> str:
    scale = results.scale
    assert scale is not None
    return "\n".join(
        [
            f"{scale.runs} active runs over {scale.hosts} hosts ({scale.runs // scale.hosts} "
            "each): real run directories on the far side, each with a live process carrying "
            "its run's marker, so every poll finds it running; the hosts are aliases of the "
            "one sshd, each with its own ControlMaster and work directory. The daemon is the "
            "real one with counters added (bench/counting_daemon.py), its registry filled "
            f"before it started. Poll interval {scale.interval_s:g} s"
            f"{' (the default)' if scale.interval_s == 5.0 else ''}; measured "
            f"over {scale.rounds} poll rounds ({scale.window_s:.0f} s) after two warm-up "
            "rounds. CPU shares are of one core over that window.",
            "",
            scale_table(scale),
        ]
    )
