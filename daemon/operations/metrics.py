"""run/metrics: a run's series, progress and its host's GPUs; with follow, `run/points` as
they change, until the run ends.

The series come from the monitor's polls and any tail of the run (MetricsStore). A run the
store knows nothing of (one that ended before this daemon started) is read once, its last
READ_ONCE bytes, with the same watch.sh the monitor sends.
"""

from __future__ import annotations

from rtrain.protocol.messages import MetricsParams, MetricsResult, MetricsUpdate, RunInfo, RunRef

from .context import Ops
from .notifier import Notifier
from .status import status as run_status
from .watch import watch_host

# How often a follower looks at the run's state when nothing else woke it.
FOLLOW_CHECK = 1.0
READ_ONCE = 1024 * 1024
ACTIVE = ("running", "unknown")


async def metrics(ops: Ops, p: MetricsParams, ctx: Notifier) -> MetricsResult:
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    run = (await run_status(ops, ref)).run
    store = ops.metrics
    if store.consumed(p.host, p.run_id, "log") == 0 and run.state not in ACTIVE:
        await watch_host(ops, p.host, [run], max_slice=READ_ONCE, gpus=False)
    if p.follow:
        run = await _follow(ops, p, ctx, run)
    return MetricsResult(
        host=p.host,
        run_id=p.run_id,
        series=store.series(p.host, p.run_id),
        latest=store.latest(p.host, p.run_id),
        progress=store.progress(p.host, p.run_id),
        gpu_history=store.gpu_history(p.host),
        run=store.annotate(run),
    )


async def _follow(ops: Ops, p: MetricsParams, ctx: Notifier, run: RunInfo) -> RunInfo:
    store = ops.metrics
    seq, progress = store.seq(p.host, p.run_id), store.progress(p.host, p.run_id)
    gpu = store.latest_gpus(p.host)
    ctx.notify(
        "run/points",
        MetricsUpdate(
            host=p.host,
            run_id=p.run_id,
            series=store.series(p.host, p.run_id),
            latest=store.latest(p.host, p.run_id),
            progress=progress,
            gpu=gpu,
            reset=True,
        ),
    )
    while run.state in ACTIVE:
        await store.wait(FOLLOW_CHECK)
        now_seq, now_progress = store.seq(p.host, p.run_id), store.progress(p.host, p.run_id)
        now_gpu = store.latest_gpus(p.host)
        if (now_seq, now_progress, now_gpu) != (seq, progress, gpu):
            ctx.notify(
                "run/points",
                MetricsUpdate(
                    host=p.host,
                    run_id=p.run_id,
                    series=store.series(p.host, p.run_id, after=seq) if now_seq != seq else [],
                    latest=store.latest(p.host, p.run_id),
                    progress=now_progress,
                    gpu=now_gpu if now_gpu is not gpu else None,
                ),
            )
            seq, progress, gpu = now_seq, now_progress, now_gpu
        run = ops.known(p.host, p.run_id) or run
    return run
