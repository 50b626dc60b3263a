"""The issue's targets, checked against one run's figures: which hold, with the figure."""

from __future__ import annotations

from dataclasses import dataclass

from bench.command_start import STATUS_HOST, STATUS_LOCAL, VERSION
from bench.operation_latency import CLI, CLIENT, FLOOR, PER_STEP, LinkLatency
from bench.results import Results
from bench.rpc_core import PYGLS, RTRAIN
from bench.sample import ratio
from bench.transfer import DOWN_RTRAIN, DOWN_SCP, UP_RTRAIN, UP_SCP
from bench.warm_start import WarmStart

STARTUP_LIMIT_S = 0.15
RSS_LIMIT_MB = 100.0
# Many small files: within this factor of tar over ssh; the same code again under AGAIN_S.
TAR_FACTOR = 1.5
AGAIN_S = 1.0
# One large file: at least scp's throughput on the direct link, this many times it on a
# delayed one; a fetch cut at half moves at most this share of the file again.
BIG_DELAYED_FACTOR = 3.5
CUT_MOVED_AGAIN = 0.55
# One changed file costs only its own time on top of the same code again: one small file's
# upload, a round trip or two, allowed this many seconds.
ONE_FILE_S = 0.5
# A start on a warm host: under WARM_S on the direct link, and the delayed link adds fewer
# than WARM_ROUND_TRIPS of its round trips.
WARM_S = 1.0
WARM_ROUND_TRIPS = 3


@dataclass
class Verdict:
    target: str
    figure: str
    holds: bool | None  # None: not measured in this run


def farthest(latency: list[LinkLatency]) -> LinkLatency | None:
    delayed = [entry for entry in latency if entry.link.delay_ms is not None]
    return max(delayed, key=lambda entry: entry.link.delay_ms or 0.0, default=None)


def verdicts(results: Results) -> list[Verdict]:
    found: list[Verdict] = []
    far = farthest(results.latency or [])
    if far is None:
        found.append(Verdict("status and tail >= 4x faster than ssh per step", "-", None))
    else:
        delay = f"+{far.link.delay_ms:g} ms"
        for operation in ("status", "tail"):
            ways = far.samples[operation]
            for way in (CLIENT, CLI):
                times = ratio(ways[PER_STEP], ways[way])
                found.append(
                    Verdict(
                        f"{operation} >= 4x faster than ssh per step at {delay} ({way})",
                        f"{times:.1f}x",
                        times >= 4.0,
                    )
                )
        status = far.samples["status"]
        round_trip_ms = 2 * (far.link.delay_ms or 0.0)
        for way in (CLIENT, CLI):
            above = (status[way].median - status[FLOOR].median) * 1000
            found.append(
                Verdict(
                    f"status within one round trip ({round_trip_ms:g} ms) of the floor "
                    f"at {delay} ({way})",
                    f"{above:+.0f} ms",
                    above <= round_trip_ms,
                )
            )
    for entry in results.transfer or []:
        pairs = (("upload", UP_RTRAIN, UP_SCP), ("fetch", DOWN_RTRAIN, DOWN_SCP))
        for label, mine, theirs in pairs:
            share = ratio(entry.mb_per_s[mine], entry.mb_per_s[theirs])
            found.append(
                Verdict(
                    f"{label} >= 80% of scp's throughput, {entry.link.label}",
                    f"{share:.0%}",
                    share >= 0.8,
                )
            )
    if results.rpc:
        by_key = {(figures.server, figures.clients): figures for figures in results.rpc}
        for clients in sorted({figures.clients for figures in results.rpc}):
            times = ratio(by_key[(RTRAIN, clients)].per_second, by_key[(PYGLS, clients)].per_second)
            found.append(
                Verdict(f"RPC ahead of pygls, {clients} client(s)", f"{times:.1f}x", times > 1.0)
            )
    if results.start:
        for name in (VERSION, STATUS_LOCAL, STATUS_HOST):
            sample = results.start.seconds.get(name)
            if sample is not None:
                found.append(
                    Verdict(
                        f"`{name.split(' (')[0]}` under {STARTUP_LIMIT_S} s"
                        + (f" ({name.split(' (')[1]}" if " (" in name else ""),
                        f"{sample.median * 1000:.0f} ms",
                        sample.median < STARTUP_LIMIT_S,
                    )
                )
    if results.scale:
        scale = results.scale
        found.append(
            Verdict(
                "one remote command per host per poll",
                f"{scale.commands_per_host_round:.2f}",
                abs(scale.commands_per_host_round - 1.0) < 0.01,
            )
        )
        found.append(
            Verdict(
                f"daemon resident memory under {RSS_LIMIT_MB:g} MB "
                f"({scale.runs} runs, {scale.hosts} hosts)",
                f"{scale.rss_mb:.0f} MB",
                scale.rss_mb < RSS_LIMIT_MB,
            )
        )
    found += _warm_verdicts(results.warm or [])
    for files in results.files or []:
        for direction, ours, reference in (
            ("ship", files.ship, files.ship_tar),
            ("fetch", files.fetch, files.fetch_tar),
        ):
            times = ratio(ours, reference)
            found.append(
                Verdict(
                    f"{files.files} files, {direction} within {TAR_FACTOR:g}x of tar over ssh, "
                    f"{files.link.label}",
                    f"{times:.2f}x",
                    times <= TAR_FACTOR,
                )
            )
        found.append(
            Verdict(
                f"the same code again ({files.files} files) under {AGAIN_S:g} s, "
                f"{files.link.label}",
                f"{files.again.median:.2f} s",
                files.again.median < AGAIN_S,
            )
        )
        on_top = files.one_changed.median - files.again.median
        found.append(
            Verdict(
                f"one file changed: under {ONE_FILE_S:g} s on top of the same code again, "
                f"{files.link.label}",
                f"{on_top:+.2f} s",
                on_top < ONE_FILE_S,
            )
        )
    found += _big_file_verdicts(results)
    return found


def _big_file_verdicts(results: Results) -> list[Verdict]:
    big = results.big_file
    if big is None:
        return []
    found = []
    size = f"{big.size_bytes / 1e6:.0f} MB"
    for entry in big.transfer:
        direct = entry.link.delay_ms is None
        wanted = 1.0 if direct else BIG_DELAYED_FACTOR
        pairs = (("upload", UP_RTRAIN, UP_SCP), ("fetch", DOWN_RTRAIN, DOWN_SCP))
        for label, mine, theirs in pairs:
            times = ratio(entry.mb_per_s[mine], entry.mb_per_s[theirs])
            found.append(
                Verdict(
                    f"{size} {label} >= {wanted:g}x scp's throughput, {entry.link.label}",
                    f"{times:.2f}x",
                    times >= wanted,
                )
            )
    if big.cut is not None:
        found.append(
            Verdict(
                f"a {size} fetch cut at {big.cut.cut_at_bytes / big.size_bytes:.0%} moves at "
                f"most {CUT_MOVED_AGAIN:.0%} of it again",
                f"{big.cut.moved_again:.0%}",
                big.cut.moved_again <= CUT_MOVED_AGAIN,
            )
        )
    return found


def _warm_verdicts(warm: list[WarmStart]) -> list[Verdict]:
    found: list[Verdict] = []
    direct = next((entry for entry in warm if entry.link.delay_ms is None), None)
    if direct is None:
        return found
    median = direct.seconds.median
    found.append(
        Verdict(
            f"a warm start under {WARM_S:g} s, direct", f"{median * 1000:.0f} ms", median < WARM_S
        )
    )
    for entry in warm:
        if entry.link.delay_ms:
            # The link's share of the start: its time above the direct link's, in round trips.
            round_trip = 2 * entry.link.delay_ms / 1000
            trips = (entry.seconds.median - median) / round_trip
            found.append(
                Verdict(
                    f"a warm start under {WARM_ROUND_TRIPS} round trips, {entry.link.label}",
                    f"{trips:.1f} round trips ({entry.calls_per_start:.3g} far calls)",
                    trips < WARM_ROUND_TRIPS,
                )
            )
    return found
