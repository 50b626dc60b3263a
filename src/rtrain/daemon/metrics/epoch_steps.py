"""Which step a bar that counts batches within its epoch stands at (Lightning's
`Epoch 2:  40%|████      | 4/10 [...]`).

An epoch starts where the one before it ended: after as many batches as that epoch's bar
reached (the largest n it drew), not after its total, since with `max_steps` Lightning cuts
the last epoch's total short (`Epoch 1: 1/5` after epochs of 10). An epoch never seen (the
log read from its middle) counts as the fullest total seen. A bar that names no epoch once
bars with one were drawn (Lightning, resumed in the middle of an epoch, draws the rest of it
as `Training: | 6/? [...]`) goes on with the latest epoch.
"""

from __future__ import annotations

# Epochs whose first step is remembered, for a restart that goes back to one of them; past
# that, the oldest are forgotten (and such an epoch starts at epoch x the fullest total).
MAX_EPOCHS = 4096


class EpochSteps:
    def __init__(self) -> None:
        self.epoch: int | None = None  # the latest epoch a bar named
        self._start = 0.0  # the steps before it
        self._reached = 0.0  # the most batches its bar counted
        self._full = 0.0  # the largest total of any epoch's bar
        self._starts: dict[int, float] = {}

    def step(self, epoch: int | None, n: float, total: float | None) -> float | None:
        """The step of a bar at `n` of `total` in `epoch` (None: the bar names none); None
        when no bar has named an epoch (the bar's n is then the step)."""
        if epoch is None:
            if self.epoch is None:
                return None
            epoch = self.epoch
        if total is not None and total > self._full:
            self._full = total
        if epoch != self.epoch:
            self._enter(epoch)
        if n > self._reached:
            self._reached = n
        return self._start + n

    def reached(self) -> float | None:
        """The step the latest epoch's bar reached (None: no bar named an epoch)."""
        return None if self.epoch is None else self._start + self._reached

    def full(self) -> float:
        """The batches of a whole epoch: the largest total any epoch's bar drew."""
        return self._full

    def _enter(self, epoch: int) -> None:
        if self.epoch is not None and epoch > self.epoch:
            # Onwards, as training goes: after the batches this epoch reached.
            start = self._start + self._reached + (epoch - self.epoch - 1) * self._full
        else:
            # Back (a restart from scratch or from an earlier epoch), or the first bar seen.
            start = self._starts.get(epoch, epoch * self._full)
        self.epoch, self._start, self._reached = epoch, start, 0.0
        self._starts.pop(epoch, None)
        self._starts[epoch] = start
        while len(self._starts) > MAX_EPOCHS:
            del self._starts[next(iter(self._starts))]
