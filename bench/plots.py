"""The PNGs of docs/performance.md: latency against one-way delay, throughput, RPC rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.operation_latency import OPERATIONS, WAYS, LinkLatency
from bench.rpc_core import RpcFigures
from bench.transfer import FETCHES, UPLOADS, LinkTransfer

COLOURS = {
    "rtrain command": "#1f77b4",
    "rtrain open client": "#2ca02c",
    "ssh per step": "#d62728",
    "far-side script on a master": "#ff7f0e",
    "floor": "#7f7f7f",
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def latency_plot(latency: list[LinkLatency], path: Path) -> None:
    plt = _pyplot()
    delayed = sorted(
        (entry for entry in latency if entry.link.delay_ms is not None),
        key=lambda entry: entry.link.delay_ms or 0.0,
    )
    figure, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for axis, operation in zip(axes.flat, OPERATIONS, strict=True):
        for way in WAYS:
            points = [
                (entry.link.delay_ms, entry.samples[operation][way])
                for entry in delayed
                if way in entry.samples.get(operation, {})
            ]
            if not points:
                continue
            xs = [delay for delay, _ in points]
            medians = [sample.median * 1000 for _, sample in points]
            low = [(sample.median - sample.spread[0]) * 1000 for _, sample in points]
            high = [(sample.spread[1] - sample.median) * 1000 for _, sample in points]
            axis.errorbar(
                xs, medians, yerr=[low, high], marker="o", capsize=3, label=way,
                color=COLOURS.get(way),
            )  # fmt: skip
        axis.set_title(operation)
        axis.set_xlabel("one-way delay added (ms)")
        axis.set_ylabel("median latency (ms)")
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    figure.suptitle("Operation latency against one-way delay (bars: interquartile range)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def throughput_plot(
    transfer: list[LinkTransfer], console: list[tuple[str, float]], path: Path
) -> None:
    plt = _pyplot()
    ways = list(UPLOADS) + list(FETCHES)
    if console:
        figure, (axis, side) = plt.subplots(
            1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 1.2]}
        )
    else:
        figure, axis = plt.subplots(figsize=(10, 4.8))
    width = 0.8 / len(ways)
    for index, way in enumerate(ways):
        xs = [position + index * width for position in range(len(transfer))]
        medians = [entry.mb_per_s[way].median for entry in transfer]
        low = [entry.mb_per_s[way].median - entry.mb_per_s[way].spread[0] for entry in transfer]
        high = [entry.mb_per_s[way].spread[1] - entry.mb_per_s[way].median for entry in transfer]
        hatch = "//" if "scp" in way else None
        axis.bar(xs, medians, width, yerr=[low, high], capsize=2, label=way, hatch=hatch)
    axis.set_xticks(
        [position + 0.4 - width / 2 for position in range(len(transfer))],
        [entry.link.label for entry in transfer],
    )
    axis.set_ylabel("MB/s (median)")
    size_mb = transfer[0].size_bytes / 1e6 if transfer else 0
    axis.set_title(f"exec transport, {size_mb:g} MB per transfer (bars: interquartile range)")
    axis.legend(fontsize=8, ncol=2)
    axis.grid(axis="y", alpha=0.3)
    if console:
        labels = [label for label, _ in console]
        side.barh(range(len(console)), [value for _, value in console], color="#9467bd")
        side.set_yticks(range(len(console)), labels, fontsize=8)
        side.invert_yaxis()
        side.set_xlabel("MB/s (median)")
        side.set_title("console transport (bench/console_transfer.py)", fontsize=9)
        side.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def rpc_plot(rpc: list[RpcFigures], path: Path) -> None:
    plt = _pyplot()
    servers = sorted({figures.server for figures in rpc})
    clients = sorted({figures.clients for figures in rpc})
    by_key = {(figures.server, figures.clients): figures for figures in rpc}
    figure, axis = plt.subplots(figsize=(6, 4))
    width = 0.8 / len(servers)
    for index, server in enumerate(servers):
        xs = [position + index * width for position in range(len(clients))]
        values = [by_key[(server, count)].per_second.median for count in clients]
        axis.bar(xs, values, width, label=server)
    axis.set_xticks(
        [position + 0.4 - width / 2 for position in range(len(clients))],
        [f"{count} client{'s' if count > 1 else ''}" for count in clients],
    )
    axis.set_ylabel("daemon/info requests per second (median)")
    axis.set_title("RPC core over a Unix socket")
    axis.legend()
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
