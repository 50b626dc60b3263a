"""Metrics in a real daemon: a hostile log read by a tail and the monitor stays bounded."""

from __future__ import annotations

from rtrain.daemon.metrics.run_series import MAX_POINTS, MAX_SERIES
from tests.operations.harness import Ops

# A 3 MB line with no newline, NaN and infinities, a thousand metric names, then 10^6 lines.
HOSTILE = r"""
import sys
out = sys.stdout
out.write("x" * 3_000_000)
out.write("\nstep 1 | loss nan | lr inf\n")
for i in range(1000):
    out.write("step %d | m%d 1.5 | loss 0.5\n" % (i + 2, i))
for i in range(10**6):
    out.write("step %d | loss %.4f\n" % (i + 1002, 1.0 / (i + 1)))
out.write("{'loss': 0.125, 'epoch': 3.0}\n")
out.flush()
"""


def test_a_hostile_log_leaves_bounded_series_and_the_right_latest_values(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(HOSTILE, run_id=run_id)
    result, chunks = ops.tail(run_id)
    assert result.run.state == "completed"
    assert len(chunks.data) > 3_000_000 + 10**6 * 15
    metrics = ops.request("run/metrics", {"host": "plain", "runId": run_id})
    assert metrics.latest["loss"] == 0.125 and metrics.latest["epoch"] == 3.0
    assert len(metrics.series) <= MAX_SERIES
    assert all(len(s.steps) <= MAX_POINTS for s in metrics.series)
    # The daemon still answers at once, and `runs` carries the latest loss.
    [listed] = [r for r in ops.request("runs/list", {}).runs if r.run_id == run_id]
    assert listed.latest["loss"] == 0.125
