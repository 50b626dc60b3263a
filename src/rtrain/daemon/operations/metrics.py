"""run/metrics: a run's series, progress and its host's GPUs; with follow, `run/points` as
they change, until the run ends.

The series come from the monitor's polls and any tail of the run (MetricsStore). Before it
answers, a run still active, or one whose files were not read since it ended, is read up to
now with the same watch.sh the monitor sends (one round trip, from where reading stood, at
most READ_ONCE bytes of each file): so the points a trainer printed a moment ago are there,
and so are those it wrote just before it ended. An ended run read since is answered at once.
"""

from __future__ import annotations

from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import MetricsParams, MetricsResult, MetricsUpdate, RunInfo, RunRef
from rtrain.protocol.run_states import is_ended, is_writing

from .context import DaemonState
from .notifier import Notifier
from .status import status as run_status
from .watch import attempt_of, watch_host

# How often a follower looks at the run's state when nothing else woke it.
FOLLOW_CHECK = 1.0
READ_ONCE = 1024 * 1024


async def metrics(ops: DaemonState, p: MetricsParams, ctx: Notifier) -> MetricsResult:
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    store = ops.metrics
    run = ops.known(p.host, p.run_id)
    starting = (p.host, p.run_id) in ops.starting
    if run is None or p.workdir is not None or starting:
        run = (await run_status(ops, ref)).run
    if not starting and not store.final(p.host, p.run_id, attempt_of(run)):
        run = await _read_now(ops, ref, run)
    if p.follow:
        run = await _follow(ops, p, ctx, run)
    annotated = store.annotate(run)
    return MetricsResult(
        host=p.host,
        run_id=p.run_id,
        series=store.series(p.host, p.run_id),
        latest=store.latest(p.host, p.run_id),
        # As the run's own: an ended run's bar stands where it stopped, with no time left.
        progress=annotated.progress,
        gpu_history=store.gpu_history(p.host),
        run=annotated,
    )


async def _read_now(ops: DaemonState, ref: RunRef, run: RunInfo) -> RunInfo:
    """`run` with its files read up to now; its state too, if it was still active."""
    try:
        [fresh], moved = await watch_host(ops, ref.host, [run], max_slice=READ_ONCE, gpus=False)
    except RpcError as error:
        if not host_did_not_answer(error):
            raise
        if is_ended(run.state):
            return run  # what was read before will do
        return ops.mark_unknown(ref.host, ref.run_id, error)
    if is_ended(run.state):
        if moved:
            ops.publish(ops.annotate(run))  # its state stands; its metrics grew
        return run
    if fresh is None:
        return (await run_status(ops, ref)).run  # gone: status says so in its words
    return ops.record(fresh, metrics_changed=bool(moved))


async def _follow(ops: DaemonState, p: MetricsParams, ctx: Notifier, run: RunInfo) -> RunInfo:
    store = ops.metrics
    seq, progress = store.seq(p.host, p.run_id), store.progress(p.host, p.run_id)
    gpu = store.latest_gpus(p.host)
    generation = store.generation(p.host, p.run_id)
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
    while is_writing(run.state):
        await store.wait(FOLLOW_CHECK)
        now_seq, now_progress = store.seq(p.host, p.run_id), store.progress(p.host, p.run_id)
        now_gpu = store.latest_gpus(p.host)
        now_generation = store.generation(p.host, p.run_id)
        if (now_seq, now_progress, now_gpu) != (seq, progress, gpu):
            # Points went (a new attempt, a lower rank's series): the follower starts over.
            reset = now_generation != generation
            ctx.notify(
                "run/points",
                MetricsUpdate(
                    host=p.host,
                    run_id=p.run_id,
                    series=store.series(p.host, p.run_id, after=0 if reset else seq)
                    if now_seq != seq or reset
                    else [],
                    latest=store.latest(p.host, p.run_id),
                    progress=now_progress,
                    gpu=now_gpu if now_gpu is not gpu else None,
                    reset=reset,
                ),
            )
            seq, progress, gpu = now_seq, now_progress, now_gpu
            generation = now_generation
        run = ops.known(p.host, p.run_id) or run
    return run
