"""`rtrain hosts`: the hosts rtrain knows of; forget one, or set its price."""

from __future__ import annotations

import shutil
from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.run_state_text import cut_text
from rtrain.protocol import requests
from rtrain.protocol.durations import human_duration
from rtrain.protocol.limit_words import cost_text

from .completion import complete_host
from .describe import table
from .guard_view import guard_cell
from .input_checks import check
from .metrics_view import (
    gpu_text,
)
from .output import fail, friendly_errors, note, print_json
from .shared_options import JsonOpt


@friendly_errors
def hosts(
    forget: str | None = typer.Option(
        None,
        "--forget",
        metavar="HOST",
        help="Forget HOST: its connection record and last error (not its runs).",
        autocompletion=complete_host,
    ),
    price: tuple[str, str] | None = typer.Option(
        None,
        "--price",
        metavar="HOST RATE",
        help="What an hour of HOST costs (any unit, e.g. 0.22), over config.toml's "
        "price_per_hour; RATE off goes back to that.",
    ),
    json: bool = JsonOpt,
) -> None:
    """List known hosts with their connection, transport, runs and, where priced, what
    they cost while rtrain saw them up (and of that, idle)."""
    if price is not None:
        _set_price(*price, json=json)
        return
    if forget is not None:
        check(host=forget)
        with DaemonClient.connect() as client:
            client.call(requests.hosts_forget(alias=forget))
        note(f"forgot {forget}")
        return
    with DaemonClient.connect() as client:
        found = client.call(requests.hosts_list()).hosts
    if json:
        print_json(found)
        return
    headers = ["HOST", "CONNECTION", "TRANSPORT", "RUNS", "RUNNING", "GPUS"]
    rows = [
        [
            h.alias,
            h.connection,
            h.transport or "-",
            str(h.runs),
            str(h.running),
            ", ".join(gpu_text(g) for g in h.gpus) or _partitions_text(h) or "-",
        ]
        for h in found
    ]
    # A GUARD column only once some host has a guard rtrain has seen.
    if any(h.guard is not None for h in found):
        headers.insert(5, "GUARD")
        for row, h in zip(rows, found, strict=True):
            row.insert(5, guard_cell(h.guard))
    # A LOGIN column only once some host holds a login (`rtrain login`).
    if any(h.login_since is not None for h in found):
        from .login_commands import since_text

        headers.append("LOGIN")
        for row, h in zip(rows, found, strict=True):
            row.append("-" if h.login_since is None else f"since {since_text(h.login_since)}")
    if any(h.cost is not None for h in found):
        headers += ["COST", "IDLE"]
        for row, h in zip(rows, found, strict=True):
            row += _host_cost_cells(h)
    # The last error goes in CONNECTION, cut so that every line fits the terminal (the
    # whole of it is in --json and the daemon log).
    others = sum(
        max(len(row[i]) for row in [headers, *rows]) + 2 for i in range(len(headers)) if i != 1
    )
    room = shutil.get_terminal_size().columns - others
    for row, h in zip(rows, found, strict=True):
        if h.last_error:
            row[1] = _connection_cell(h.connection, h.last_error, room)
    print(table(headers, rows))


# Of a last error, fewer characters than this say nothing: the word alone is shown then.
MIN_ERROR = 12


def _connection_cell(connection: str, error: str, room: int) -> str:
    """`failed (ssh: connect to host ... refused)`, cut to `room`; the connection's own word
    is never cut (`failed`, not `faile…`)."""
    cell = f"{connection} ({error})"
    if len(cell) <= room:
        return cell
    if room - len(connection) - 3 < MIN_ERROR:
        return connection
    return cut_text(cell, room)


def _set_price(host: str, rate: str, json: bool) -> None:
    check(host=host)
    price: float | None = None
    if rate.strip().lower() not in ("off", "none"):
        try:
            price = float(rate)
        except ValueError:
            price = -1.0
        if not 0 <= price <= 1e6:
            fail(f"--price {host}: {rate!r} is not a rate: give a number like 0.22, or off.", 2)
    with DaemonClient.connect() as client:
        result = client.call(requests.hosts_price(alias=host, price_per_hour=price))
    if json:
        print_json(result)
    elif result.price_per_hour is None:
        note(f"{host} has no price now")
    else:
        note(f"{host} costs {result.price_per_hour:g} an hour")


def _host_cost_cells(host: Any) -> list[str]:
    """COST and IDLE: what the host cost while rtrain saw it up; what of it was idle."""
    if host.cost is None:
        return ["-", "-"]
    idle = f"{cost_text(host.idle_cost)} ({human_duration(host.idle_seconds)})"
    return [cost_text(host.cost), idle]


def _partitions_text(host: Any) -> str:
    """A Slurm host's GPUs, per partition as its last preflight saw them: `slurm gpu 1/2 free`."""
    scheduler: str | None = getattr(host, "scheduler", None)
    if not scheduler:
        return ""
    parts = [f"{p.name} {p.free_gpus}/{p.gpus} free" for p in host.partitions]
    return scheduler + (": " + ", ".join(parts) if parts else "")
