"""The general rule for the print lines nobody listed (docs/metrics.md, "The general rule").

A line yields metrics when it names a loss, a step, an epoch or an iteration, as a pair: a
name of one or two words, then `:`, `=` or blanks, then a number (with `%`, `ms` or `s`
stuck to it at most). So nanoGPT's `iter 10: loss 3.8044, time 14.01ms, mfu 0.01%`, Megatron's
`| lm loss: 7.1E+00 | grad norm: 2.3 |`, Keras' `- loss: 0.2345 - accuracy: 0.91` and a
hand-written `Epoch 3 | Step 120/500 | Loss=0.52` all read. A name starts where a word starts
(not inside a path, a URL's query or a version), and the number must end where a field
ends, so `v1.2.3`, `12:30:45`, `2024-05-01` and `/ckpt/loss_0.5.pt` are never pairs.

The step comes from the line: `step N` (or `iter N`, `iteration N`, `global step N`); else
`[n/total]` (or a bare `n/total`), counted on from the epoch when the line has one
(`epoch x total + n`); else `Epoch N`. Names are lower-cased, their words joined by `_`
(`train loss` -> `train_loss`); a name whose last word is `step`, `iter`, `iteration` or
`epoch` is that word (`Train Epoch: 1` -> `epoch`).
"""

from __future__ import annotations

import math
import re

# Names that are said with a number but are not a metric of the run.
NOT_METRICS = frozenset(
    {"v_num", "version", "python", "torch", "cuda", "pid", "port", "rank", "local_rank",
     "world_size", "seed"}
)  # fmt: skip
MAX_NAME = 64
STEP_WORDS = ("step", "global_step", "iteration", "iter", "num_updates")
# absl/glog's `I0501 12:30:45.123456 12345 train.py:120] `: its file:line is not a metric.
_GLOG = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9} {1,8}\d{1,10} [^\s\]]{1,256}\] ?")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,16}://\S{0,4096}")
_WORD = r"[A-Za-z_][A-Za-z0-9_./-]{0,63}"
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Inf|Infinity)"
_PAIR = re.compile(
    # A name starts a word: not inside a path, a query string, a version or an address.
    # (The look at the first letter before the look behind lets the engine skip ahead.)
    rf"(?=[A-Za-z_])(?<![A-Za-z0-9_./\-?&=#@])({_WORD}(?: {_WORD})?)"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+)"
    rf"({_NUM})(?:[ \t]*/[ \t]*(\d+))?(%|ms|s)?"
    # ... and its number ends a field (`:` too, as in `iter 10:`, but not `12:30`).
    r"""(?=[\s,;|)\]}"'│┃]|:(?!\d)|$)"""
)
# `done: 40 steps`, `after 3 epochs`: a count of steps (or epochs) says where the line stands.
_COUNT_OF = re.compile(r"[ \t]+(step|iter|iteration|epoch)s?\b", re.IGNORECASE)
# `[640/60000]`, `(3/10)`, `200/ 2983 batches`, a line's leading `100/100`.
_FRACTION = re.compile(r"(?:^|(?<=[\[(\s]))(\d+)[ \t]*/[ \t]*(\d+)(?=[\])\s,]|$)")
# A row of a boxed table (Lightning's metrics after validate/test): `│ val_loss │ 0.23 │`.
_BOX = re.compile(r"[│┃|]")
_TABLE_NAME = re.compile(_WORD)
_TABLE_NUMBER = re.compile(_NUM)


def read_free_text(text: str) -> dict[str, float] | None:
    """The values of a line the general rule reads (the step as `step`), else None."""
    if text[0] in "│┃":
        return _table_row(text)
    cleaned = _worth_reading(text)
    if cleaned is None:
        return None
    line = _LinePairs(cleaned)
    if line.step is None and line.epoch is None and not line.named_loss:
        return None  # it named no loss, step, epoch or iteration: not a metrics line
    return line.placed()


def _worth_reading(text: str) -> str | None:
    """The line without what never holds a pair (URLs, a glog prefix), or None when it
    names no loss, step, epoch or iteration at all."""
    # Cheap first look: plain `in` on the lower-cased line is ten times faster than a
    # case-blind regex, and most lines of a log stop here.
    lowered = text.lower()
    if (
        "loss" not in lowered
        and "step" not in lowered
        and "epoch" not in lowered
        and "iter" not in lowered
    ):
        return None
    if "://" in text:
        text = _URL.sub(" ", text)
    if text[0] in "IWEF":
        glog = _GLOG.match(text)
        if glog is not None:
            text = text[glog.end() :] or " "
    return text


class _LinePairs:
    """The name-number pairs of one line: its values, and where it stands (step, epoch,
    a fraction of an epoch)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[str, float] = {}
        self.step: float | None = None
        self.epoch: float | None = None
        self.taken: list[tuple[int, int]] = []
        self.fraction: tuple[float, float] | None = None
        self.named_loss = False
        for match in _PAIR.finditer(text):
            self._take(match)

    def _take(self, match: re.Match[str]) -> None:
        name = _name(match[1])
        if name in NOT_METRICS or len(name) > MAX_NAME:
            return
        value = float(match[2].replace("Infinity", "inf"))
        self.taken.append(match.span())
        count = _COUNT_OF.match(self.text, match.end())
        if count is not None and match[3] is None and math.isfinite(value):
            name = count[1].lower()  # `done: 40 steps` is step 40, not a `done` of 40
        if match[3] is not None and name not in ("step", "epoch", "iter", "iteration"):
            if name == "batch" and self.fraction is None:
                self.fraction = value, float(match[3])  # `[Batch 200/937]`: within the epoch
            return  # `9800/10000` is a count of a count, not a value
        if not math.isfinite(value) and not name.endswith("loss"):
            return  # `is nan` in prose; a loss of nan is news
        if name in STEP_WORDS:
            if self.step is None:
                self.step = value
        elif name == "epoch":
            if self.epoch is None:
                self.epoch = value
        elif name not in self.values:
            self.values[name] = value
            self.named_loss = self.named_loss or "loss" in name

    def placed(self) -> dict[str, float] | None:
        """The values with the step the line stands at; None when it says only that."""
        values, step, epoch = self.values, self.step, self.epoch
        if step is None:
            fraction = self.fraction or _fraction(self.text, self.taken)
            if fraction is not None:
                n, total = fraction
                step = epoch * total + n if epoch is not None else n
                if epoch is not None:
                    values["epoch"] = epoch
            elif epoch is not None:
                step = epoch
        elif epoch is not None:
            values["epoch"] = epoch
        if all(name == "epoch" for name in values):
            return None  # only where it stands
        if step is not None:
            values["step"] = step
        return values


def _name(words: str) -> str:
    name = words.lower()
    if " " in name:
        # The last word is the head: `train loss` is a loss, `Train Epoch` an epoch,
        # `loss python 3.10` a python.
        last = name.rsplit(" ", 1)[1]
        if last in ("step", "iter", "iteration", "epoch") or last in NOT_METRICS:
            return last
        name = name.replace(" ", "_")
    return "step" if name == "global_step" else name


def _fraction(text: str, taken: list[tuple[int, int]]) -> tuple[float, float] | None:
    for match in _FRACTION.finditer(text):
        start = match.start()
        if any(a <= start < b for a, b in taken):
            continue  # `Epoch 1/10`: the epoch's own count
        return float(match[1]), float(match[2])
    return None


def _table_row(text: str) -> dict[str, float] | None:
    cells = [cell.strip() for cell in _BOX.split(text, 4)]
    cells = [cell for cell in cells if cell]
    if len(cells) != 2:
        return None
    name, number = cells
    if _TABLE_NAME.fullmatch(name) is None or _TABLE_NUMBER.fullmatch(number) is None:
        return None
    if name in NOT_METRICS:
        return None
    value = float(number.replace("Infinity", "inf"))
    return {name: value}
