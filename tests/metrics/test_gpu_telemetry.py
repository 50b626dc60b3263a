"""nvidia-smi's answers, [N/A] and [Not Supported] included, as GpuStats."""

from __future__ import annotations

from rtrain.daemon.metrics.gpu_telemetry import gpu_stats, run_gpus

UUID0 = "GPU-3f1c9a52-7d04-4e8b-b1a6-000000000000"
UUID1 = "GPU-3f1c9a52-7d04-4e8b-b1a6-000000000001"
GPUS = [
    f"0, {UUID0}, 87, 30000, 81559, 54, 312.45, NVIDIA H100 80GB HBM3",
    f"1, {UUID1}, [N/A], [Not Supported], 81559, 31, [N/A], NVIDIA A100-SXM4-80GB, MIG, 2g",
    "garbage line",
]
APPS = [
    ("run-1", f"4242, {UUID0}, 29000, /usr/bin/python3"),
    ("-", f"77, {UUID1}, [Not Supported], python, with, commas"),
    ("-", "not a pid, x, y, z"),
]


def test_fields_it_could_not_read_are_left_out() -> None:
    first, second = gpu_stats(GPUS, APPS)
    assert (first.index, first.utilization, first.memory_used_mib, first.power_w) == (
        0,
        87,
        30000,
        312.45,
    )
    assert first.temperature_c == 54 and first.name == "NVIDIA H100 80GB HBM3"
    assert [(p.pid, p.run_id, p.used_memory_mib) for p in first.processes] == [
        (4242, "run-1", 29000)
    ]
    assert second.utilization is None and second.memory_used_mib is None and second.power_w is None
    assert second.memory_total_mib == 81559 and second.name == "NVIDIA A100-SXM4-80GB, MIG, 2g"
    [other] = second.processes
    assert other.run_id is None and other.used_memory_mib is None
    assert other.name == "python, with, commas"
    assert run_gpus([first, second], "run-1") == [0]
