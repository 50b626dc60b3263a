"""What the figures mean, for docs/performance.md. Written from the figures of the same run,
so the explanations cannot drift from the numbers when the suite runs again."""

from __future__ import annotations

from bench.command_start import FLOOR as BARE_PYTHON
from bench.command_start import STATUS_HOST, STATUS_LOCAL
from bench.operation_latency import CLI, CLIENT, FLOOR, PER_STEP, SCRIPT, LinkLatency
from bench.results import Results
from bench.sample import Sample
from bench.targets import farthest, verdicts
from bench.transfer import DOWN_RTRAIN, DOWN_SCP, DOWN_SCP_MUX, UP_RTRAIN, UP_SCP, UP_SCP_MUX


def _ms(sample: Sample | None) -> str:
    return "-" if sample is None or not sample.values else f"{sample.median * 1000:.0f} ms"


def commentary(results: Results) -> dict[str, str]:
    notes = {"targets": _targets(results)}
    if results.latency:
        notes["latency"] = _latency(results.latency, results)
    if results.transfer:
        notes["transfer"] = _transfer(results)
    if results.scale:
        notes["scale"] = _scale(results)
    notes["limits"] = _limits(results)
    return notes


def _targets(results: Results) -> str:
    found = verdicts(results)
    measured = [verdict for verdict in found if verdict.holds is not None]
    held = [verdict for verdict in measured if verdict.holds]
    missed = [verdict for verdict in measured if not verdict.holds]
    text = f"{len(held)} of {len(measured)} targets hold in this run."
    if missed:
        text += " Why the others do not, and what would change that, is under each benchmark "
        text += "and in [What limits these figures](#what-limits-these-figures)."
    return text


def _latency(latency: list[LinkLatency], results: Results) -> str:
    far = farthest(latency)
    if far is None:
        return ""
    delay = far.link.delay_ms or 0.0
    round_trip = 2 * delay / 1000
    status = far.samples["status"]
    tail = far.samples["tail"]
    floor = status[FLOOR].median
    fresh = status[PER_STEP].median
    lines = [
        f"**Reading the +{delay:g} ms rows.** A round trip costs {round_trip * 1000:.0f} ms. "
        f"The floor, `ssh true` on an open master, took {floor * 1000:.0f} ms, about "
        f"{floor / round_trip:.1f} round trips: OpenSSH opens a channel on the connection "
        "and then asks it to run the command, one round trip each. A fresh `ssh` took "
        f"{fresh * 1000:.0f} ms, about {fresh / round_trip:.1f} round trips: TCP, the "
        "version exchange, key exchange, authentication, then the same channel, plus the "
        f"handshake's CPU. rtrain's status on an open client took "
        f"{status[CLIENT].median * 1000:.0f} ms, {(status[CLIENT].median - floor) * 1000:.0f} ms "
        "above the floor; its far-side script run by hand on a master took "
        f"{status[SCRIPT].median * 1000:.0f} ms, so the daemon itself adds "
        f"{_added(status[CLIENT], status[SCRIPT])} and the rest is the script's own work (a few "
        "forks: the run's marker is checked with grep in its process's environment). Tail's "
        f"first line took {tail[CLIENT].median * 1000:.0f} ms on an open client and its script "
        f"(`read_log`) by hand {tail[SCRIPT].median * 1000:.0f} ms: the same state check, "
        "then `stat` and a four-process pipeline that cuts exactly the bytes asked for.",
        "",
        "**The `rtrain` command** pays a fresh Python process on every call before it says "
        f"anything: status by command took {status[CLI].median * 1000:.0f} ms against "
        f"{status[CLIENT].median * 1000:.0f} ms on an open client, the difference being "
        "start-up (benchmark 4). Where the command misses a ratio and the open client holds "
        "it, start-up is the whole gap.",
        "",
        "**Start** ships the config and the dataset with their sha256 checked on the far side "
        "and launches detached: four remote commands on the open master (make the run "
        "directory, receive the config, receive the dataset, launch), where the per-step "
        "way opens four fresh connections. **Stop** confirms the way rtrain promises: it "
        "finds every process that carries the run's marker (even one that left the process "
        "group), signals, re-checks in 0.1 s naps until none is left, and then refreshes the "
        "run's state in a second remote command. On a near link a bare `kill` and a "
        "`ps` loop on one pid is as fast or faster, because it checks less; the open "
        "connection wins as the link gets longer.",
    ]
    return "\n".join(lines)


def _added(whole: Sample, part: Sample) -> str:
    """What `whole` adds to `part`, in words; noise below a millisecond or two is nothing."""
    extra = (whole.median - part.median) * 1000
    return "nothing measurable" if extra < 2 else f"{extra:.0f} ms"


def _transfer(results: Results) -> str:
    transfer = results.transfer or []
    near = next((entry for entry in transfer if entry.link.delay_ms is None), None)
    far = max(
        (entry for entry in transfer if entry.link.delay_ms is not None),
        key=lambda entry: entry.link.delay_ms or 0.0,
        default=None,
    )
    lines = []
    if near is not None:
        rates = near.mb_per_s
        size = near.size_bytes / 1e6
        seconds = {way: size / sample.median for way, sample in rates.items()}
        text = (
            f"**On the direct link** (loopback: CPU-bound, not link-bound) scp over an open "
            f"master moved {rates[UP_SCP_MUX].median:.0f} MB/s up and "
            f"{rates[DOWN_SCP_MUX].median:.0f} MB/s down; plain scp "
            f"{rates[UP_SCP].median:.0f} and {rates[DOWN_SCP].median:.0f} (its handshake is "
            f"inside the transfer); rtrain {rates[UP_RTRAIN].median:.0f} and "
            f"{rates[DOWN_RTRAIN].median:.0f}. rtrain reads every byte more times than scp: "
            "an upload is hashed before it leaves and again by the far side before it is kept; "
            "a fetch is hashed by the far side before it is sent (and here as it arrives, "
            "which overlaps the copy)."
        )
        if near.local_hash_s.values and near.far_hash_s.values:
            local, far_side = near.local_hash_s.median, near.far_hash_s.median
            up_rest = seconds[UP_RTRAIN] - seconds[UP_SCP_MUX] - local - far_side
            down_rest = seconds[DOWN_RTRAIN] - seconds[DOWN_SCP_MUX] - far_side
            text += (
                f" The profile, from this run: one sha256 pass over the {size:g} MB took "
                f"{local:.2f} s here (hashlib, as the daemon hashes) and {far_side:.2f} s on the "
                "far side (`sha256sum` through the open master). Of the upload's "
                f"{seconds[UP_RTRAIN]:.2f} s, the copy itself (as scp over an open master "
                f"took it) is {seconds[UP_SCP_MUX]:.2f} s and the two hash passes "
                f"{local + far_side:.2f} s; the run's other three commands and the daemon's "
                f"piping take the remaining {up_rest:.2f} s. Of the fetch's "
                f"{seconds[DOWN_RTRAIN]:.2f} s, the copy is {seconds[DOWN_SCP_MUX]:.2f} s and "
                f"the far side's hash pass {far_side:.2f} s; listing the run and writing the "
                f"file here take the remaining {down_rest:.2f} s. Hashing beside the copy "
                "instead of before or after it (see below) would remove most of the "
                "difference; on a real link the copy dominates and the checksums come "
                "almost free."
            )
        lines.append(text)
    if far is not None:
        rates = far.mb_per_s
        lines.append(
            f"**At +{far.link.delay_ms:g} ms** the link itself is the limit: OpenSSH's channel "
            "window allows about 2 MB in flight per round trip, so every way lands near "
            f"the same rate (scp over an open master: {rates[UP_SCP_MUX].median:.1f} MB/s up, "
            f"{rates[DOWN_SCP_MUX].median:.1f} down), and rtrain "
            f"({rates[UP_RTRAIN].median:.1f} / {rates[DOWN_RTRAIN].median:.1f}) moves as fast "
            "as the link allows, checksums included; plain scp also pays its handshake."
        )
    return "\n\n".join(lines)


def _scale(results: Results) -> str:
    scale = results.scale
    assert scale is not None
    return (
        "The far side of all 20 hosts is this same 2-core machine, so while a poll round "
        f"runs, {scale.hosts} far-side status scripts (each checking {scale.runs // scale.hosts} "
        "runs' processes) compete with the daemon for the same cores; the worst `daemon/info` "
        "wait above is mostly that contention, not the daemon's own work (its whole CPU "
        f"over the window was {scale.daemon_cpu_percent:.1f}% of a core). On real hosts "
        "that work runs on the hosts."
    )


def _limits(results: Results) -> str:
    """The measured costs that stand between these figures and better ones, largest first."""
    items = []
    if results.start:
        seconds = results.start.seconds
        bare = seconds.get(BARE_PYTHON)
        local = seconds.get(STATUS_LOCAL)
        host = seconds.get(STATUS_HOST)
        if bare is not None and local is not None:
            items.append(
                "**Start-up of the `rtrain` command.** `rtrain status` on the host `local` "
                f"(no ssh) took {_ms(local)}, {(local.median - bare.median) * 1000:.0f} ms "
                f"above the bare interpreter ({_ms(bare)}); on the ssh host {_ms(host)}. "
                "That is importing the CLI (typer, click) and the protocol layer before the "
                "first byte goes to the daemon. It decides every ratio of the command column; "
                "bench/startup.py follows it alone."
            )
    far = farthest(results.latency or [])
    if far is not None:
        status = far.samples["status"]
        floor = status[FLOOR].median
        round_trip = 2 * (far.link.delay_ms or 0.0) / 1000
        one_trip = status[CLIENT].median - round_trip
        items.append(
            "**Two round trips per remote command.** Every command on a ControlMaster "
            f"opens a channel and then runs (the floor: {floor * 1000:.0f} ms at "
            f"+{far.link.delay_ms:g} ms). A long-lived far-side shell per host, fed commands "
            "over one open channel (as the console transport already does), would save one "
            f"round trip ({round_trip * 1000:.0f} ms) per command: status would take about "
            f"{one_trip * 1000:.0f} ms, {status[PER_STEP].median / one_trip:.0f}x faster than "
            f"the per-step way instead of {status[PER_STEP].median / status[CLIENT].median:.1f}x "
            "(an estimate from this run's figures, not a measurement)."
        )
    items += [
        "**Far-side script work.** `read_log` (tail) costs more than `status` on the far side: "
        "a `stat` and a four-process pipeline per read; a first read from offset 0 of a "
        "regular file could be one `cat`-like pass. Both scripts start with a `grep -z` probe "
        "(a two-process pipeline) that could be replaced by trying the real grep and "
        "falling back on its error status.",
        "**Start and stop in fewer commands.** Start runs four commands one after another; "
        "the run directory could be made by the first receive, and the config and dataset "
        "could travel side by side on two channels. Stop refreshes the state in a second "
        "command; stop.sh could print the final state itself.",
        "**Hashing beside the copy, not before or after it.** receive.sh could hash while it "
        "writes (`tee` into the hasher) instead of reading the file again, and the daemon "
        "could hash the upload as it sends it; fetch could stream the file while the far "
        "side hashes it, instead of hashing everything first.",
    ]
    return "\n\n".join(f"{index}. {item}" for index, item in enumerate(items, 1))
