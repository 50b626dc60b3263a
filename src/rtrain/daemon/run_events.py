"""Who hears of a run's changes inside the daemon: the subscribed clients first, then the
parts that act on a run's end (what follows it, its retry, the waits on it, config.toml's
notify), in that order; a run that is live arms its host's configured guard. DaemonState publishes
every recorded change here."""

from __future__ import annotations

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.run_retries import Retrier
from rtrain.daemon.trackers.sync import TrackerSyncs
from rtrain.daemon.trackers.tensorboard import TensorBoards
from rtrain.protocol.messages import RunInfo
from rtrain.protocol.run_states import is_live

from .after_run import AfterRuns
from .forwards import Forwards
from .reverse_forwards import ReverseForwards
from .run_end_notify import RunEndNotify
from .run_waits import RunWaits
from .service import Service


class RunEvents:
    """The fan-out of `run/changed`; the listeners made after DaemonState (they need it) join with
    `listen` before the daemon serves anyone."""

    def __init__(self, service: Service, run_ends: RunEndNotify) -> None:
        self.service = service
        self.run_ends = run_ends
        self.after_runs: AfterRuns | None = None
        self.retrier: Retrier | None = None
        self.waits: RunWaits | None = None
        self.forwards: Forwards | None = None
        self.ops: DaemonState | None = None
        self.reverse_forwards: ReverseForwards | None = None
        self.syncs: TrackerSyncs | None = None
        self.tensorboards: TensorBoards | None = None

    def listen(
        self,
        ops: DaemonState,
        after_runs: AfterRuns,
        retrier: Retrier,
        waits: RunWaits,
        forwards: Forwards,
        trackers: tuple[ReverseForwards, TrackerSyncs, TensorBoards],
    ) -> None:
        self.reverse_forwards, self.syncs, self.tensorboards = trackers
        self.ops = ops
        self.after_runs = after_runs
        self.retrier = retrier
        self.waits = waits
        self.forwards = forwards

    def changed(self, run: RunInfo) -> None:
        self.service.publish_run(run)
        if self.after_runs is not None:
            self.after_runs.seen(run)  # a run's end moves its --then-fetch/--then-terminate on
        if self.retrier is not None:
            self.retrier.seen(run)  # a run lost with retries left comes back (--retry)
        if self.waits is not None:
            self.waits.seen(run)
        self.run_ends.seen(run)  # config.toml's notify, once a run ends
        if self.reverse_forwards is not None:
            self.reverse_forwards.run_seen(run)  # a run's reverse forwards end with it
        if self.syncs is not None:
            self.syncs.seen(run)  # a run's end is its last tracker sync
        if self.ops is not None and is_live(run.state):
            self.ops.arm_configured_guard(run.host)  # a run launched: the host's guard watches

    def removed(self, run: RunInfo) -> None:
        self.service.publish_run(run, removed=True)
        if self.waits is not None:
            self.waits.seen(run, removed=True)
        if self.forwards is not None:
            self.forwards.run_removed(run)
        if self.reverse_forwards is not None:
            self.reverse_forwards.run_seen(run, removed=True)
        if self.tensorboards is not None:
            self.tensorboards.run_removed(run)
        self.run_ends.forget(run)
