"""Everything one run of the suite measured, handed from run_all to the report and the plots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.command_start import CommandStart
from bench.many_files import ManyFiles
from bench.operation_latency import LinkLatency
from bench.rpc_core import RpcFigures
from bench.scale import ScaleFigures
from bench.transfer import LinkTransfer
from bench.warm_start import WarmStart


@dataclass
class ConsoleFigures:
    """What bench/console_transfer.py reported (written by the console transport's author)."""

    rows: list[dict[str, Any]]
    text: str = ""


@dataclass
class Results:
    quick: bool
    machine: dict[str, str]
    settings: dict[str, Any]
    latency: list[LinkLatency] | None = None
    transfer: list[LinkTransfer] | None = None
    console: ConsoleFigures | None = None
    rpc: list[RpcFigures] | None = None
    start: CommandStart | None = None
    warm: list[WarmStart] | None = None
    scale: ScaleFigures | None = None
    files: list[ManyFiles] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    load_after: str = ""
