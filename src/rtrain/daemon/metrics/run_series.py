"""One run's metrics, kept bounded: fed bytes by offset, it holds series and the latest values.

Bytes come from two readers of the same log (a tail, the monitor's polls) and from
metrics.jsonl; each source is consumed once by offset, so a byte read twice counts once. A
line is parsed when it ends (`\\n`, or `\\r` for a redrawn bar); the line still being written
is looked at only for the bar's progress (and the records waiting for it). Every limit here
holds whatever the log holds: MAX_PARSE bytes parsed per read, MAX_PENDING bytes of an
unfinished line, MAX_SERIES series of MAX_POINTS points each.

Ranks: a line with a rank's tag (`[rank1]: `) is that rank's, a line without one rank 0's. A
series is the lowest rank's that printed it: when a lower rank prints a name a higher one
had, the series starts over with it, and the higher rank's lines of that name are ignored.
Attempts: a restart appends to the same log after rtrain's `==> rtrain: attempt N` line.
The series then tell the history of the model the latest attempt trains: at each series'
first point of the new attempt, the earlier points at that step or later go (a trainer
resumed from step 800 continues the curve from 800; one started afresh starts it over).

Steps: a record's own step field first. A bar's postfix is at the bar's step (counted on
across epochs, epoch_steps.py); a bar at 0 shows the values of before its reset, so gives
no point. A record with no step (HF Trainer's dicts) printed under a bar is held until the
bar is drawn again, and takes that drawing's n: tqdm draws at most every 0.1 s, so the bar
drawn before a dict may be steps behind, while the Trainer redraws it right after each dict,
as it then stands. A point at the step of its series' last point replaces it (Lightning
draws each step twice: first with the last step's values, then with its own).

Which bar: progress follows the training's bar, not one drawn below it (an evaluation's, a
checkpoint writer's: tqdm's position 1 or more, or a bar whose description was once seen
there, redrawn in the training's place as it closes) and not a bar of one item (transformers'
`Writing model shards 1/1`). Only the followed bar's drawings place held records; with no
such bar (HF's `disable_tqdm=True`) each record is a point at its count, in print order.
Keras counts batches within the epoch its last `Epoch e/E` line named: its steps and
progress count on across epochs (epoch e's batch n of N is step (e-1) x N + n, of E x N).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .epoch_steps import EpochSteps
from .log_formats import MAX_LINE, Progress, Reading, read_line

MAX_PENDING = MAX_LINE
# Of one feed, only the last MAX_PARSE bytes are parsed: a flood of lines costs a bounded
# amount of work per read, and what is skipped shows as a gap in the series.
MAX_PARSE = 64 * 1024
MAX_SERIES = 32
MAX_POINTS = 2048
# Names of a step field, in the order they are believed.
STEP_NAMES = ("step", "global_step", "iteration", "iter")
# Records without a step held for the bar's next drawing; past that, the oldest take the
# bar as it stands (a trainer printing many under a bar that is never drawn again).
MAX_HELD = 64
# Descriptions of bars seen drawn below another, remembered (a few kinds at most in a run).
MAX_SIDE_LABELS = 64
# A log line ends at a newline, or at a carriage return (a bar redrawn); a JSON line at "\n".
_LOG_END = re.compile(rb"[\r\n]")
_JSONL_END = re.compile(rb"\n")
_ATTEMPT_LINE = b"==> rtrain: attempt "


@dataclass
class Series:
    name: str
    seqs: list[int] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    rank: int = 0  # whose lines it shows
    rewind: bool = False  # a new attempt began: its first point cuts what it repeats

    def cut(self, step: float) -> bool:
        """Drop the points at `step` or later; True when any went."""
        keep = [i for i, old in enumerate(self.steps) if old < step]
        if len(keep) == len(self.steps):
            return False
        self.seqs = [self.seqs[i] for i in keep]
        self.steps = [self.steps[i] for i in keep]
        self.values = [self.values[i] for i in keep]
        return True

    def add(self, seq: int, step: float, value: float) -> None:
        if self.steps and self.steps[-1] == step:
            self.seqs[-1], self.values[-1] = seq, value
            return
        self.seqs.append(seq)
        self.steps.append(step)
        self.values.append(value)
        if len(self.seqs) > MAX_POINTS:
            # Halve: every other point of the older half goes, the recent half stays whole,
            # so the curve keeps its shape and its latest detail.
            half = len(self.seqs) // 2
            keep = list(range(0, half, 2)) + list(range(half, len(self.seqs)))
            self.seqs = [self.seqs[i] for i in keep]
            self.steps = [self.steps[i] for i in keep]
            self.values = [self.values[i] for i in keep]


@dataclass
class _Source:
    """Where reading one file stands."""

    consumed: int = 0
    pending: bytearray = field(default_factory=bytearray)
    skipping: bool = False  # inside a line too long to look at: drop bytes to its end


class RunSeries:
    def __init__(self) -> None:
        self.series: dict[str, Series] = {}
        self.latest: dict[str, float] = {}
        self.progress: Progress | None = None
        self.seq = 0  # bumped for every point; what a follower has seen is a seq
        # Bumped when points go (a new attempt, a lower rank): a follower starts over.
        self.generation = 0
        self.records = 0
        # A run across hosts: the node whose log these points came from (store.read_from).
        self.node = 0
        self.attempt = 1  # as rtrain's attempt lines in the log say
        # The attempt whose every byte was read after it ended (store.py); None: not yet.
        self.final_attempt: int | None = None
        self.final_tries = 0
        # When its log last changed (epoch seconds), as the far side told; None: not told.
        self.last_output_at: float | None = None
        self._bar_rank = 0  # the lowest rank whose bar was seen: its progress is shown
        # Where that bar (not one drawn below it) last stood, in this attempt; None: no bar.
        self._bar_n: float | None = None
        self._held: list[tuple[int, dict[str, float]]] = []  # (rank, values) with no step
        self._bar_label: str | None = None  # the followed bar's description, numbers out
        self._bar_nested = False  # the progress shown is a nested bar's (no other drawn yet)
        self._side_labels: set[str] = set()
        self._epoch_line: tuple[int, int] | None = None  # Keras' last `Epoch e/E`
        self._epochs = EpochSteps()
        # What the run's command says it trains for (`--max_epochs 4`, `--max_steps 30`):
        # Lightning's bars count one epoch each, this gives them a total (store.plan).
        self.planned_epochs: int | None = None
        self.planned_steps: int | None = None
        self._sources: dict[str, _Source] = {}

    # ---- feeding ------------------------------------------------------------------------

    def feed(self, source: str, offset: int, data: bytes, restarted: bool = False) -> bool:
        """Take bytes [offset, offset+len) of `source` ("log" or "jsonl"); True when anything
        shown (a point, the progress) changed."""
        state = self._sources.setdefault(source, _Source())
        if restarted:
            state.consumed, state.skipping = 0, False
            state.pending.clear()
        end = offset + len(data)
        if end <= state.consumed:
            return False
        if offset > state.consumed:
            # A gap (the monitor skipped to the latest bytes): the line in hand is not whole.
            state.pending.clear()
            state.skipping = offset > 0
        else:
            data = data[state.consumed - offset :]
        state.consumed = end
        if len(data) > MAX_PARSE:
            data = data[-MAX_PARSE:]
            state.pending.clear()
            state.skipping = True
        before = (self.seq, self.progress)
        self._split(state, data, source)
        if source == "log" and state.pending and not state.skipping:
            self._peek_progress(bytes(state.pending))
        return (self.seq, self.progress) != before

    def consumed(self, source: str) -> int:
        state = self._sources.get(source)
        return state.consumed if state else 0

    def _split(self, state: _Source, data: bytes, source: str) -> None:
        start = 0
        for end in (_JSONL_END if source == "jsonl" else _LOG_END).finditer(data):
            piece = data[start : end.start()]
            if state.skipping:
                state.skipping = False
            elif len(state.pending) + len(piece) <= MAX_PENDING:
                self._line(bytes(state.pending + piece))
            state.pending.clear()
            start = end.end()
        rest = data[start:]
        if rest and not state.skipping:
            if len(state.pending) + len(rest) > MAX_PENDING:
                state.pending.clear()
                state.skipping = True
            else:
                state.pending += rest

    def _line(self, raw: bytes) -> None:
        cut = raw.find(_ATTEMPT_LINE, 1)
        if cut > 0:
            # A trainer that died drawing its bar left no newline: rtrain's line opening the
            # next attempt follows the bar's last drawing on the same line.
            self._line(raw[:cut])
            raw = raw[cut:]
        reading = read_line(raw.decode(errors="replace"))
        if reading is not None:
            self._take(reading)

    def _peek_progress(self, raw: bytes) -> None:
        reading = read_line(raw.decode(errors="replace"))
        if reading is None or reading.progress is None:
            return
        bar = self._bar_of(reading, reading.progress)
        followed = self.progress
        if followed is not None and not self._bar_nested:
            # A drawing not yet ended may lack the cursor-up that says it is nested (tqdm
            # writes it apart): only the followed bar's own drawing is taken before it ends.
            if (reading.label, bar.total) != (self._bar_label, followed.total):
                return
        self._take_progress(bar, reading)

    def settle(self) -> bool:
        """Give the records still held for the bar's next drawing the bar as it stands (the
        run ended: it will not be drawn again); True when any were."""
        before = self.seq
        self._settle(self._bar_n)
        return self.seq != before

    def _take_progress(self, progress: Progress, reading: Reading) -> None:
        if progress.total is not None and progress.total <= 1:
            return  # a bar of one item (a checkpoint written) says nothing of how far a run is
        if reading.nested:
            if reading.label != self._bar_label and len(self._side_labels) < MAX_SIDE_LABELS:
                self._side_labels.add(reading.label)
            if self.progress is None:
                self.progress, self._bar_nested = progress, True
            return
        if reading.label in self._side_labels and reading.label != self._bar_label:
            return  # a bar drawn below the training's, redrawn in its place as it closes
        rank = reading.rank or 0
        if rank <= self._bar_rank or self.progress is None or self._bar_nested:
            self._bar_rank = rank
            self._bar_label = reading.label
            self.progress, self._bar_nested = progress, False
            self._bar_n = progress.n
            self._settle(self._bar_n)

    def _bar_of(self, reading: Reading, bar: Progress) -> Progress:
        """The progress a bar says: Keras' over all epochs; Lightning's over all its planned
        epochs, where the command says how many (else the epoch's own bar)."""
        if reading.in_epoch:
            return self._across_epochs(bar)
        if reading.epoch is None or reading.nested or bar.total is None:
            return bar
        total = self._planned_total(bar.total)
        if total is None:
            return bar
        step = self._epochs.step(reading.epoch, bar.n, bar.total)
        if step is None:
            return bar
        n = min(step, total)
        remaining = (total - n) / bar.rate if bar.rate else None
        return Progress(n=n, total=total, rate=bar.rate, remaining=remaining, elapsed=None)

    def _planned_total(self, epoch_total: float) -> float | None:
        """The steps of the whole fit from the planned epochs (and max_steps, which may cut
        it short), with epochs of `epoch_total` batches; None when neither is planned."""
        full = max(epoch_total, self._epochs.full())
        by_epochs = self.planned_epochs * full if self.planned_epochs else None
        steps = float(self.planned_steps) if self.planned_steps else None
        known = [t for t in (by_epochs, steps) if t is not None]
        return min(known) if known else None

    def _fit_ended(self) -> None:
        """Lightning said its fit ran its course: the progress is the whole fit, done."""
        reached = self._epochs.reached()
        if self.progress is None or reached is None:
            return
        self.progress = Progress(
            n=reached, total=reached, rate=self.progress.rate, remaining=None, elapsed=None
        )

    def _across_epochs(self, bar: Progress) -> Progress:
        """Keras' bar within an epoch as a bar over all epochs (its last epoch line's)."""
        if self._epoch_line is None or bar.total is None:
            return bar
        epoch, epochs = self._epoch_line
        n = (epoch - 1) * bar.total + bar.n
        total = max(epoch, epochs) * bar.total
        remaining = (total - n) / bar.rate if bar.rate else None
        return Progress(n=n, total=total, rate=bar.rate, remaining=remaining)

    def _new_attempt(self, attempt: int) -> None:
        self._settle(self._bar_n)
        self.attempt = attempt
        self.progress = None  # the last attempt's bar says nothing of this one
        self._bar_rank = 0
        self._bar_n = None
        self._bar_label, self._bar_nested, self._epoch_line = None, False, None
        for series in self.series.values():
            series.rewind = True

    def _take(self, reading: Reading) -> None:
        if reading.attempt is not None:
            self._new_attempt(reading.attempt)
            return
        if reading.epochs is not None:
            self._epoch_line = (reading.epoch or 1, reading.epochs)
            return
        if reading.fit_end is not None:
            self._fit_ended()
            return
        rank = reading.rank or 0
        bar, values, step = self._bar_and_values(reading)
        if not values:
            return
        if step is None or not math.isfinite(step):
            step = None
            if bar is not None:
                if bar.n == 0:
                    return  # a bar reset for a new epoch still shows the last one's values
                step = self._epochs.step(reading.epoch, bar.n, bar.total)
                if step is None:
                    step = bar.n
            elif self._bar_n is not None:
                self.records += 1
                self._held.append((rank, values))
                if len(self._held) > MAX_HELD:
                    self._settle(self._bar_n, 1)
                return
        if self._held:
            self._settle(self._bar_n)  # what was held came before this record
        self.records += 1
        self._add(rank, float(self.records) if step is None else step, values)

    def _bar_and_values(
        self, reading: Reading
    ) -> tuple[Progress | None, dict[str, float], float | None]:
        """The reading's bar (taken for the progress), its values and its own step."""
        bar = reading.progress
        if bar is not None:
            shown = self._bar_of(reading, bar)
            self._take_progress(shown, reading)
            if reading.in_epoch:
                bar = shown  # Keras' batch counts on across epochs; Lightning's epochs count below
        values = dict(reading.values)
        step = next((values.pop(n) for n in STEP_NAMES if n in values), None)
        if reading.in_epoch and bar is not None:
            step = bar.n  # Keras' batch, counted on across epochs
        return bar, values, step

    def _settle(self, step: float | None, count: int | None = None) -> None:
        """The first `count` held records (all: None) at `step`."""
        if not self._held:
            return
        settled = self._held[:count] if count is not None else self._held
        self._held = self._held[len(settled) :]
        for rank, values in settled:
            self._add(rank, float(self.records) if step is None else step, values)

    def _add(self, rank: int, step: float, values: dict[str, float]) -> None:
        self.seq += 1
        for name, value in values.items():
            series = self.series.get(name)
            if series is None:
                if len(self.series) >= MAX_SERIES:
                    continue
                series = self.series[name] = Series(name, rank=rank)
            elif rank > series.rank:
                continue  # a higher rank's copy of what a lower one prints
            elif rank < series.rank:
                series = self.series[name] = Series(name, rank=rank)
                self.generation += 1
            if series.rewind:
                series.rewind = False
                if series.cut(step):
                    self.generation += 1
            series.add(self.seq, step, value)
            self.latest[name] = value
