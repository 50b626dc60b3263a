"""Benchmark: a directory of many small files, and a large fetch cut and resumed.

    python -m bench.tree_transfer --write         # 3,000 files, 1 GB, 3 reps, direct and +25 ms
    python -m bench.tree_transfer --files 300 --cut-mb 256 --reps 1   # a smoke run

- **Tree fetch:** 3,000 files of 4-64 KB of random bytes in 30 folders, fetched by `run/fetch`
  (every file verified by its sha256) into an empty folder, against `scp -r` as a user types
  it (handshake included, nothing verified); then `run/fetch` again into the same folder
  (every file already home: the listing with hashes, no file byte sent). Direct link and
  through the delay proxy.
- **Cut and resume:** a fetch of one large file stopped (Ctrl-C, as the CLI sends it) once 90%
  of its bytes have arrived, then run again: the bytes the second fetch sent, as the daemon
  counts them (`sentBytes`), against the file's size.

Prints a markdown table for docs/performance.md. Needs root (the test hosts), as run_all.py.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.per_command_ssh import PerCommandSsh  # noqa: E402
from bench.processes import run_checked  # noqa: E402
from bench.report import MANY_FILES  # noqa: E402
from bench.sample import Sample  # noqa: E402
from bench.world import BenchWorld, Link  # noqa: E402

MAKE_TREE = """
import os, random, sys
root, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
for n in range(count):
    folder = os.path.join(root, f"d{n % 30:02d}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"f{n:05d}.bin"), "wb") as f:
        f.write(os.urandom(rng.randint(4096, 65536)))
"""


def start_run(client: Any, world: BenchWorld, alias: str, run_id: str, config: Path) -> str:
    client.request("run/start", {
        "host": alias, "runId": run_id, "config": str(config), "gpus": 0,
        "workdir": world.workdir, "command": ["true"],
    })  # fmt: skip
    return f"{world.workdir_abs}/{run_id}"


def fetch(client: Any, alias: str, run_id: str, path: str, dest: Path, **kw: Any) -> Any:
    params: dict[str, Any] = {"host": alias, "runId": run_id, "path": path, "dest": str(dest)}
    if "on_notification" in kw:
        params["progressToken"] = 1
    return client.request("run/fetch", params, **kw)


def tree_rows(world: BenchWorld, links: list[Link], files: int, reps: int) -> Iterator[str]:
    assert world.daemon is not None
    client = world.daemon.client()
    config = world.local_dir("tree-inputs") / "config.yaml"
    config.write_text("steps: 1\n")
    for link in links:
        run_id = f"tree-{link.alias}"
        run_dir = start_run(client, world, link.alias, run_id, config)
        world.far_side('python3 -c "$1" "$2" "$3"', MAKE_TREE, f"{run_dir}/tree", str(files))
        client.request("host/preflight", {"host": link.alias, "gpus": 0})
        ssh = PerCommandSsh(world.ssh_config, link.alias)
        fresh, scp, again = Sample(), Sample(), Sample()
        total = 0
        # scp -r pays round trips per file: at +25 ms one pass over 3,000 files takes minutes.
        for rep in range(reps if link.delay_ms is None else 1):
            landing = world.local_dir(f"tree-{link.alias}-{rep}")
            rtrain_dest, scp_dest = landing / "rtrain", landing / "scp"
            scp_argv = _scp_r(ssh, f"{run_dir}/tree", scp_dest)

            def by_rtrain(
                alias: str = link.alias, run: str = run_id, to: Path = rtrain_dest
            ) -> Any:
                return fetch(client, alias, run, "tree", to)

            def by_scp(argv: list[str] = scp_argv) -> Any:
                return run_checked(argv, timeout=3600)

            ways: list[tuple[str, Callable[[], Any]]] = [("rtrain", by_rtrain), ("scp", by_scp)]
            for way, move in ways[rep % 2 :] + ways[: rep % 2]:
                started = time.perf_counter()
                done = move()
                (fresh if way == "rtrain" else scp).add(time.perf_counter() - started)
                if way == "rtrain":
                    total = done.total_bytes
                    assert done.sent_bytes == total and len(done.files) == files
            started = time.perf_counter()
            done = by_rtrain()
            again.add(time.perf_counter() - started)
            assert done.sent_bytes == 0 and done.skipped == files
            shutil.rmtree(landing, ignore_errors=True)
        yield (
            f"| {link.label} | {files} files, {total / 1e6:.0f} MB | {_s(fresh)} | {_s(scp)} "
            f"| {scp.median / fresh.median:.2f} | {_s(again)} |"
        )
    client.close()


def _scp_r(ssh: PerCommandSsh, remote: str, local: Path) -> list[str]:
    argv = ssh.scp_from(remote, local)
    return argv[:1] + ["-r"] + argv[1:]


def _s(sample: Sample) -> str:
    low, high = sample.spread
    return f"{sample.median:.2f} ({low:.2f}-{high:.2f})"


def cut_rows(world: BenchWorld, links: list[Link], size_mb: int, reps: int) -> Iterator[str]:
    from rtrain.client.errors import Interrupted

    assert world.daemon is not None
    client = world.daemon.client()
    config = world.local_dir("cut-inputs") / "config.yaml"
    config.write_text("steps: 1\n")
    size = size_mb * 1_000_000
    cut_at = 0.9 * size
    for link in links:
        run_id = f"cut-{link.alias}"
        run_dir = start_run(client, world, link.alias, run_id, config)
        world.far_side('head -c "$2" /dev/urandom > "$1/model.bin"', run_dir, str(size))
        resent = Sample()
        finished = 0
        for rep in range(reps):
            dest = world.local_dir(f"cut-{link.alias}-{rep}")

            pressed: list[bool] = []

            def stop_at_90(method: str, params: Any, pressed: list[bool] = pressed) -> None:
                # Once: a second Ctrl-C would abort the wait for the cancel's answer.
                if method == "$/progress" and not pressed and params.value.done_bytes >= cut_at:
                    pressed.append(True)
                    raise KeyboardInterrupt

            try:
                fetch(
                    client, link.alias, run_id, "model.bin", dest,
                    on_notification=stop_at_90, cancel_on_interrupt=True,
                )  # fmt: skip
            except Interrupted:
                pass
            if (dest / "model.bin").exists():
                # The link outran the Ctrl-C: nothing was cut, nothing to resume.
                finished += 1
                shutil.rmtree(dest, ignore_errors=True)
                continue
            done = fetch(client, link.alias, run_id, "model.bin", dest)
            assert (dest / "model.bin").stat().st_size == size
            resent.add(100 * done.sent_bytes / size)
            shutil.rmtree(dest, ignore_errors=True)
        if resent.n == 0:
            yield f"| {link.label} | {size_mb} MB | every fetch finished before its Ctrl-C |"
            continue
        low, high = resent.spread
        late = f"; {finished} of {reps} finished before the Ctrl-C" if finished else ""
        yield (
            f"| {link.label} | {size_mb} MB, cut at 90% (Ctrl-C) | "
            f"{resent.median:.1f}% ({low:.1f}-{high:.1f}){late} |"
        )
    client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--cut-mb", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=25.0)
    parser.add_argument("--cut-only", action="store_true", help="only the cut fetch")
    parser.add_argument(
        "--write", action="store_true", help="write docs/perf/many_files.md for the report"
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="rtrain-tree-bench-"))
    world = BenchWorld(root, [args.delay_ms])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "### Many files, and a cut fetch",
        "",
        f"Measured by `bench/tree_transfer.py` on {when}"
        " (run on its own: `scp -r` through the delay proxy takes minutes). A tree of "
        f"{args.files} files of 4-64 KB in 30 folders: `run/fetch` into an empty folder "
        "(every file verified by its sha256) against `scp -r` as a user types it (nothing "
        "verified), then `run/fetch` again (every file already home: the listing with "
        f"hashes, no file byte sent). Seconds, median (interquartile range); {args.reps} "
        "runs each on the direct link, one through the proxy.",
        "",
        "| link | tree | rtrain fetch, s | scp -r, s | scp ÷ rtrain | re-fetch, s |",
        "|---|---|---|---|---|---|",
    ]
    try:
        links = [world.link(None), world.link(args.delay_ms)]
        for line in lines:
            print(line)
        for row in [] if args.cut_only else tree_rows(world, links, args.files, args.reps):
            print(row, flush=True)
            lines.append(row)
        cut = [
            "",
            f"A fetch of {args.cut_mb} MB of random bytes stopped (Ctrl-C, as the CLI sends it) "
            "once 90% had arrived, then run again: what the second fetch sent, as the daemon "
            f"counts it (`sentBytes`), in % of the file ({args.reps} runs).",
            "",
            "| link | fetch | re-sent by the resumed fetch (% of the file) |",
            "|---|---|---|",
        ]
        for line in cut:
            print(line)
        lines += cut
        for row in cut_rows(world, links, args.cut_mb, args.reps):
            print(row, flush=True)
            lines.append(row)
    finally:
        world.close()
    if args.write:
        MANY_FILES.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
