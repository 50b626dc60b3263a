"""nvidia-smi's CSV (`--format=csv,noheader,nounits`) as GpuStats.

The query is watch.sh's: `index,uuid,utilization.gpu,memory.used,memory.total,
temperature.gpu,power.draw,name` per GPU, and `pid,gpu_uuid,used_memory,process_name` per
compute process. A field nvidia-smi cannot tell reads `[N/A]`, `[Not Supported]` or the
like: that field is left out, the rest of the line stays.
"""

from __future__ import annotations

import math

from rtrain.protocol.messages import GpuProcess, GpuStat

GPU_FIELDS = 8
APP_FIELDS = 4
MAX_GPUS = 64
MAX_APPS = 256


def gpu_stats(gpu_lines: list[str], app_lines: list[tuple[str, str]]) -> list[GpuStat]:
    by_uuid: dict[str, list[GpuProcess]] = {}
    for run_id, line in app_lines[:MAX_APPS]:
        parts = [p.strip() for p in line.split(",", APP_FIELDS - 1)]
        if len(parts) < APP_FIELDS or not parts[0].isdigit():
            continue
        by_uuid.setdefault(parts[1], []).append(
            GpuProcess(
                pid=int(parts[0]),
                used_memory_mib=_number(parts[2]),
                name=_text(parts[3]),
                run_id=None if run_id == "-" else run_id,
            )
        )
    stats = []
    for line in gpu_lines[:MAX_GPUS]:
        parts = [p.strip() for p in line.split(",", GPU_FIELDS - 1)]
        if len(parts) < GPU_FIELDS or not parts[0].isdigit():
            continue
        uuid = _text(parts[1])
        stats.append(
            GpuStat(
                index=int(parts[0]),
                uuid=uuid,
                utilization=_number(parts[2]),
                memory_used_mib=_number(parts[3]),
                memory_total_mib=_number(parts[4]),
                temperature_c=_number(parts[5]),
                power_w=_number(parts[6]),
                name=_text(parts[7]),
                processes=by_uuid.get(uuid or "", []),
            )
        )
    return stats


def run_gpus(stats: list[GpuStat], run_id: str) -> list[int]:
    """The GPUs where a process of `run_id` computes."""
    return [g.index for g in stats if any(p.run_id == run_id for p in g.processes)]


def _unknown(text: str) -> bool:
    return not text or text.startswith("[") or text in ("N/A", "Unknown Error")


def _number(text: str) -> float | None:
    if _unknown(text):
        return None
    try:
        value = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    return value if math.isfinite(value) else None


def _text(text: str) -> str | None:
    return None if _unknown(text) else text[:200]
