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
    if results.files:
        notes["files"] = _files(results)
    if results.big_file:
        notes["big_file"] = _big_file(results)
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
    client = status[CLIENT].median
    below = client < floor
    lines = [
        f"**Reading the +{delay:g} ms rows.** A round trip costs {round_trip * 1000:.0f} ms. "
        f"The floor, `ssh true` on an open master, took {floor * 1000:.0f} ms, about "
        f"{floor / round_trip:.1f} round trips: OpenSSH opens a channel on the connection "
        "and then asks it to run the command, one round trip each. A fresh `ssh` took "
        f"{fresh * 1000:.0f} ms, about {fresh / round_trip:.1f} round trips: TCP, the "
        "version exchange, key exchange, authentication, then the same channel, plus the "
        f"handshake's CPU. rtrain's status on an open client took {client * 1000:.0f} ms, "
        f"about {client / round_trip:.1f} round trips, "
        f"{abs(client - floor) * 1000:.0f} ms {'below' if below else 'above'} the floor: the "
        "daemon keeps a far-side shell open on the master and types each script into it "
        "([architecture](architecture.md), long-lived shells), so a script costs one round "
        "trip plus its own work. The same script run by hand on a master, on a channel of "
        f"its own, took {status[SCRIPT].median * 1000:.0f} ms. Tail's first line took "
        f"{tail[CLIENT].median * 1000:.0f} ms on an open client and its script (`read_log`) "
        f"by hand {tail[SCRIPT].median * 1000:.0f} ms.",
        "",
        "**The `rtrain` command** pays a fresh Python process on every call before it says "
        f"anything: status by command took {status[CLI].median * 1000:.0f} ms against "
        f"{client * 1000:.0f} ms on an open client, the difference being start-up "
        "(benchmark 4): for `status` and `tail` that is the bare interpreter plus `json` and "
        "a socket (client/daemon_client.py, the one client); typer and msgspec are not loaded.",
        "",
        "**Start** ships the config and the dataset with their sha256 checked on the far side "
        "and launches detached: four remote commands on the open master. Making the run "
        "directory goes through the long-lived shell; the config and the dataset travel side "
        "by side, each on a channel of its own, because their bytes go on its stdin; and "
        "the launch takes a channel too, so the trainer gets a fresh login environment. The "
        "per-step way opens four fresh connections one after another. **Stop** confirms the "
        "way rtrain promises, in one remote command: it finds every process that carries the run's "
        "marker (even one that left the process group), signals, looks again 20 ms later and "
        "then in 0.1 s naps until none is left, and answers with the run's state. On a near "
        "link a bare `kill` and a `ps` loop on one pid is about as fast, because it checks "
        "less; the open connection wins as the link gets longer.",
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
            f"{rates[DOWN_RTRAIN].median:.0f}. rtrain hashes every byte on both sides and scp "
            "none: an upload is hashed here before it leaves (its sha256 goes with the "
            "command) and by the far side as it writes; a fetch is hashed by the far side as "
            "it sends and here as it arrives. Beside the copy means on the same cores: on this "
            "2-core machine the far side's hasher competes with ssh, sshd and the daemon."
        )
        if near.local_hash_s.values and near.far_hash_s.values:
            local, far_side = near.local_hash_s.median, near.far_hash_s.median
            up_rest = seconds[UP_RTRAIN] - seconds[UP_SCP_MUX] - local
            down_rest = seconds[DOWN_RTRAIN] - seconds[DOWN_SCP_MUX]
            text += (
                f" The profile, from this run: one sha256 pass over the {size:g} MB took "
                f"{local:.2f} s here (hashlib, as the daemon hashes) and {far_side:.2f} s on the "
                "far side (`openssl dgst -sha256` where it hashes, as the far-side scripts "
                f"pick it). Of the upload's {seconds[UP_RTRAIN]:.2f} s, the copy itself (as scp "
                f"over an open master took it) is {seconds[UP_SCP_MUX]:.2f} s and the hash "
                f"pass here {local:.2f} s; the far side's hashing beside the copy, the run's "
                f"other three commands and the daemon's piping take the remaining "
                f"{up_rest:.2f} s. Of the fetch's {seconds[DOWN_RTRAIN]:.2f} s, the copy is "
                f"{seconds[DOWN_SCP_MUX]:.2f} s; the listing, the hashing on both sides beside "
                f"the copy and writing the file here take the remaining {down_rest:.2f} s. On "
                "a real link the copy dominates and the checksums come almost free."
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


def _big_file(results: Results) -> str:
    """Where a large file's time goes, with this run's figures."""
    big = results.big_file
    assert big is not None
    size = big.size_bytes / 1e6
    near = next((entry for entry in big.transfer if entry.link.delay_ms is None), None)
    far = max(
        (entry for entry in big.transfer if entry.link.delay_ms is not None),
        key=lambda entry: entry.link.delay_ms or 0.0,
        default=None,
    )
    lines = [
        "**Where a large upload's time goes.** The daemon reads the file once before it "
        "ships it, taking the whole file's sha256 and each 16 MiB piece's together (the "
        "host's cache is looked up by the first; the far side checks each piece against the "
        "second). Then each channel's bytes move on a thread of their own: `sendfile` from "
        "the file into the pipe to ssh, so no byte of an upload passes through Python (the "
        "event loop hears a count per MiB; it used to handle every pipe write of 64 KiB or "
        "less, which cost the daemon more CPU than its hashing). A channel carries a run of "
        "up to 4 consecutive pieces to one far `python3` (`range_mover.py`), which reads, "
        "hashes, writes and marks each piece as it lands, so a channel's opening and a far "
        "process's start are paid once per 64 MiB while a cut still keeps every verified "
        "16 MiB piece. The seal needs no second hash of the whole copy, since every piece "
        "was verified against a digest taken in the same read as the whole file's. What is "
        "left after the bytes: the copy into the cache's entry is a rename, and the run's "
        "own copy of it is one `cp` in the kernel (`copy_file_range`; a reflink where the "
        "filesystem has them)."
    ]
    if near is not None:
        rates = near.mb_per_s
        text = (
            f"**On the direct link** rtrain moved {size:g} MB at "
            f"{rates[UP_RTRAIN].median:.0f} MB/s up and {rates[DOWN_RTRAIN].median:.0f} "
            f"down; scp over an open master {rates[UP_SCP_MUX].median:.0f} and "
            f"{rates[DOWN_SCP_MUX].median:.0f}. Both share this machine's two cores with "
            "sshd and ssh (the cipher, on each side; rtrain's master asks for AES-GCM where "
            "the CPU has AES instructions, scp as typed keeps ssh's default, "
            "chacha20-poly1305); rtrain also hashes every byte on both sides (a fetch's "
            "pieces on the channel's own thread that reads the pipe in blocks of up to 1 MiB, "
            "and the whole file once more on the far side, for the answer's sha256). Hashing "
            "is most of the daemon's own CPU; what the machine spends beyond scp is that "
            "hashing, the far side's, and the kernel writing the file twice on the host (the "
            "cache's copy and the run's). This machine is a virtual one that hands its free "
            "memory back to its host: a copy that lands in memory the host took back pays a "
            "fault on each page's first touch, 2-3 s per GB here. A fetch by rtrain writes "
            "past the page cache (O_DIRECT), so it pays none of them; scp's copies do. "
            "The fetches come right after the uploads, with no memory freed between, so each "
            "copy through the cache lands in such memory (the open master's copy, too, lands "
            "in a file of its own). On a machine whose free memory stays mapped, scp's fetch "
            "pays no such faults and needs less CPU than rtrain's, which verifies every byte."
        )
        if near.local_hash_s.values and near.far_hash_s.values:
            text += (
                f" One sha256 pass over the file took {near.local_hash_s.median:.2f} s here "
                f"and {near.far_hash_s.median:.2f} s on the far side in this run."
            )
        lines.append(text)
    if far is not None:
        rates = far.mb_per_s
        lines.append(
            f"**At +{far.link.delay_ms:g} ms** each SSH channel carries one window (about "
            "2 MB) per round trip, so scp, on one channel, is held near "
            f"{rates[UP_SCP_MUX].median:.0f} MB/s; rtrain runs 8 channels side by side (the "
            "most a default `MaxSessions` of 10 leaves beside the two long-lived shells) and "
            f"moved {rates[UP_RTRAIN].median:.0f} MB/s up and {rates[DOWN_RTRAIN].median:.0f} "
            "down. Each stream also pays its channel's opening and its far script's start "
            "(about two round trips), once per 64 MiB each way (a run of four 16 MiB pieces "
            "up, one 64 MiB piece down). The delay "
            "proxy holds at most 64 chunks of up to 64 KiB per direction in flight (one TCP "
            "stream through it at +50 ms moved 81 MB/s when measured alone), so the rows at "
            "this delay are near the imitation's own ceiling."
        )
    return "\n\n".join(lines)


def _scale(results: Results) -> str:
    scale = results.scale
    assert scale is not None
    sessions = ""
    if scale.sshd_sessions_per_host_round < 0.5:
        sessions = (
            "Each host's one status command per round goes through a far-side shell the "
            "daemon keeps open, so the far sshd starts no session for it: "
            f"{scale.sshd_sessions_per_host_round:.2f} per host per round. "
        )
    return sessions + (
        "The far side of all 20 hosts is this same 2-core machine, so while a poll round "
        f"runs, {scale.hosts} far-side status scripts (each checking {scale.runs // scale.hosts} "
        "runs' processes) compete with the daemon for the same cores; the worst `daemon/info` "
        "wait above is mostly that contention, not the daemon's own work (its whole CPU "
        f"over the window was {scale.daemon_cpu_percent:.1f}% of a core). On real hosts "
        "that work runs on the hosts."
    )


def _files(results: Results) -> str:
    assert results.files is not None
    again = ", ".join(f"{entry.again.median:.2f} s ({entry.link.label})" for entry in results.files)
    floor = ", ".join(
        f"{entry.far_cp.median:.2f} s / {entry.far_tar.median:.2f} s ({entry.link.label})"
        for entry in results.files
        if entry.far_cp.values
    )
    return (
        f"The same code again took {again}; the far side's own `cp -r` / `tar c | tar x` of "
        f"the run directory it placed took {floor or 'not measured'}, timed there: the copy "
        "alone, with no start around it. What it costs: the daemon only stats the local "
        "files (their sha256 is remembered while they are unchanged); the far side checks "
        "every cache entry's identity and makes the run its own copy of each file, in one "
        "python3 process (`cache_inputs.py`). On a filesystem without reflinks (this "
        "machine's ext4) that copy writes the whole tree again, as `tar x` does; with "
        "reflinks (btrfs, XFS) it writes no data. The rest is the start's own round trips "
        "(the run directory, the input list, the launch on a fresh login). A cold ship "
        "writes every byte once before its answer, as the run's own file, hashed as it "
        "comes, as `tar x` writes it (checking nothing); the far side then copies each "
        "file into its input cache and hashes the copy, after the answer (the bench waits "
        "for that before it times anything else). A fetch hashes each file on both sides."
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
                f"above the bare interpreter ({_ms(bare)}); on the ssh host {_ms(host)}. The "
                "interpreter itself is most of it (this Python's site start-up); what rtrain "
                "adds is `json`, a socket and the daemon's answer. Other commands load typer "
                "(`rtrain --help` in benchmark 4)."
            )
    far = farthest(results.latency or [])
    if far is not None:
        status = far.samples["status"]
        round_trip = 2 * (far.link.delay_ms or 0.0) / 1000
        items.append(
            "**One round trip per script, two per transfer.** A script goes through a "
            "long-lived far-side shell and waits one round trip "
            f"({round_trip * 1000:.0f} ms at +{far.link.delay_ms:g} ms; status on an open "
            f"client took {status[CLIENT].median * 1000:.0f} ms). Below that only an answer "
            "the daemon already holds can go: a run that ended is answered from the "
            "registry, but a running one is asked, because a state is only worth what its "
            "last look is. An upload or a fetch opens a channel of its own (its bytes need "
            "the channel's stdin or stdout) and pays two."
        )
    items += [
        "**Far-side script work.** `read_log` (tail) costs more than `status` on the far side: "
        "a `stat` and a four-process pipeline per read; a first read from offset 0 of a "
        "regular file could be one `cat`-like pass. Both scripts start with a `grep -z` probe "
        "(a two-process pipeline) that could be replaced by trying the real grep and "
        "falling back on its error status.",
        "**Start in fewer commands.** Start makes the run directory, ships the files (side "
        "by side) and launches: three steps one after another, each at least a round trip; "
        "the first receive could make the run directory.",
        "**The upload's hash pass here.** The daemon hashes a file (whole and by pieces, in "
        "one read) before it ships it, because the host's cache is looked up by its sha256 "
        "and each piece is checked against its own; a file remembered unchanged since its "
        "last hashing is not read again, but a new one waits for that pass before its "
        "first byte leaves.",
    ]
    return "\n\n".join(f"{index}. {item}" for index, item in enumerate(items, 1))
