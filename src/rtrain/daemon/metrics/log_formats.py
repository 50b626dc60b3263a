"""What one line of a training log says about metrics: a pure function of the line.

Formats (docs/metrics.md has them exactly):
- rtrain's own `step 10 | loss 3.2145 | lr 0.01`: `|`-separated `name number` fields;
- a Python dict as HF Trainer prints it, `{'loss': 1.2345, 'learning_rate': 2e-05, ...}`,
  its numbers also as transformers 5 formats them (`'loss': '4.902'`) or as tensors;
- a JSON object, `{"loss": 1.2, "step": 3}`: its numeric top-level fields;
- a tqdm bar, `Epoch 1:  45%|####5     | 45/100 [00:12<00:15,  3.61it/s, loss=0.5]`:
  the progress (n, total, rate, remaining time), the epoch its description names and the
  postfix's numbers (Lightning's); which step that is, is the run's to say (run_series.py);
- Keras 3's progress bar and its epoch lines, `Epoch 2/4` then
  `15/15 ━━━━ 1s 59ms/step - loss: 0.81 - val_loss: 0.52` (`verbose=1`, redrawn after
  backspaces) or `15/15 - 0s - 33ms/step - loss: 0.81` (`verbose=2`): the batch within the
  epoch the last epoch line named (run_series.py counts on across epochs), and its values;
- rtrain's line opening a restart's attempt, `==> rtrain: attempt 2 of RUN started at ...`;
- anything else by the general rule (free_text.py): nanoGPT, Megatron, Keras, people's own.
A rank's tag before the line (`[rank1]: `, `[default0]:`) is taken off and kept.

Every pattern is anchored and linear, and a line longer than MAX_LINE is not looked at, so
no line costs more than reading its bytes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from .free_text import NOT_METRICS, read_free_text
from .line_prefixes import split_rank, without_ansi

MAX_LINE = 4096
MAX_NAME = 64
MAX_FIELDS = 32

_NUMBER = (
    r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"|nan|NaN|-?inf|-?Infinity"
)
_NAME = r"[A-Za-z_][A-Za-z0-9_./-]{0,63}"
_PIPE_FIELD = re.compile(rf"\s*({_NAME})[\s:=]+({_NUMBER})\s*")
# `'loss': 1.5`, `'loss': '1.5'` (transformers 5), `'loss': tensor(1.5, device='cuda:0')`.
_DICT_FIELD = re.compile(
    rf"""['"]({_NAME})['"]\s*:\s*(?:tensor\()?(['"]?)({_NUMBER})\2\s*(?=[,}})])"""
)
_TQDM = re.compile(
    r"(?:(?P<pct>\d{1,3})%\|[^|]{0,120}\|\s*)?"
    # Lightning's bar format writes an unknown total as `?` (`Training: | 6/? [...]`).
    r"(?P<n>\d+(?:\.\d+)?)(?P<nsuffix>[kMG]?)"
    r"(?:/(?:(?P<total>\d+(?:\.\d+)?)(?P<tsuffix>[kMG]?)|\?))?"
    r"(?:\s*[A-Za-z]{0,10})?\s*"
    r"\[(?P<elapsed>[\d:]{1,12})(?:<(?P<remaining>[\d:?]{1,12}))?,\s*"
    r"(?P<rate>[\d.]+|\?)\s*(?P<unit>[A-Za-z]{0,10}/s|s/[A-Za-z]{0,10})"
    r"(?P<postfix>(?:,[^\]]{0,1000})?)\]"
)
_POSTFIX_FIELD = re.compile(rf"\s*({_NAME})=({_NUMBER})\s*")
_SUFFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}
# A bar's description naming its epoch (Lightning's `Epoch 3:`).
_BAR_EPOCH = re.compile(r"\bEpoch[ \t]+(\d{1,9})\b", re.IGNORECASE)
# rtrain's own line before a restart's output (launch.sh).
_ATTEMPT = re.compile(r"==> rtrain: attempt (\d{1,6}) of ")
_CURSOR_UP = "\x1b[A"
# Lightning's last word on a fit that ran its course: how many epochs (or steps) it was for.
_FIT_STOPPED = re.compile(r"`Trainer\.fit` stopped: `max_(epochs|steps)=(\d{1,9})` reached")
# Keras' line opening an epoch, 1-based: `Epoch 2/4`.
_EPOCH_LINE = re.compile(r"Epoch (\d{1,9})/(\d{1,9})")
# Keras 3's bar: `n/total`, the bar (verbose=1) or `-` (verbose=2), the time left (or taken,
# once the epoch is done), the time per step, then `- name: value` fields.
_KERAS = re.compile(
    r"(?P<n>\d{1,12})/(?P<total>\d{1,12}|Unknown)[ \t]+(?:━{1,200}[ \t]+|-[ \t]+)?"
    r"(?P<time>\d{1,9}(?::\d\d){0,2}s?)[ \t]+(?:-[ \t]+)?"
    r"(?P<per>\d{1,9})(?P<unit>s|ms|us)/(?:step|sample)"
    rf"(?P<fields>(?:[ \t]+-[ \t]+{_NAME}:[ \t]+(?:{_NUMBER})){{0,{MAX_FIELDS}}})[ \t]*"
)
_KERAS_FIELD = re.compile(rf"-[ \t]+({_NAME}):[ \t]+({_NUMBER})")
_PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6}
# A bar's description with its numbers taken out: what tells one bar from another
# (`Epoch 2:` and `Epoch 3:` are one bar, `Writing model shards:` another).
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Progress:
    """Where a progress bar stands: `n` of `total` (when known), items per second, seconds
    left (when tqdm could tell)."""

    n: float
    total: float | None = None
    rate: float | None = None
    remaining: float | None = None
    elapsed: float | None = None


@dataclass
class Reading:
    """What a line said: numeric fields by name (`step` among them when given), progress,
    the rank whose tag it had, and the attempt it opens (rtrain's restart line). Of a bar:
    the epoch its description names (`Epoch 2:`), whether it is drawn below another
    (`nested`: tqdm's position 1 or more, as an evaluation's or a checkpoint writer's bar),
    its `label` (the description without its numbers), and `in_epoch` for Keras' bar, whose
    n counts the batches of the epoch the last epoch line named. Of an epoch line
    (`Epoch 2/4`): `epoch` and `epochs`."""

    values: dict[str, float] = field(default_factory=dict)
    progress: Progress | None = None
    rank: int | None = None
    attempt: int | None = None
    epoch: int | None = None
    nested: bool = False
    label: str = ""
    in_epoch: bool = False
    epochs: int | None = None
    # Lightning's `Trainer.fit` stopped: `max_epochs=N` reached (`max_steps=N`: "steps").
    fit_end: str | None = None


def read_line(line: str) -> Reading | None:
    """The metrics in one line (one `\\r`-separated state of it), or None when it has none."""
    text = line.strip()
    if not text or len(text) > MAX_LINE:
        return None
    if "\b" in text:
        # Keras backs over its last drawing before the next: the backspaces draw nothing.
        text = text.replace("\b", "").strip()
        if not text:
            return None
    nested = False
    if "\x1b" in text:
        # tqdm draws a bar at position p below the first with p newlines before it and p
        # cursor-ups after it: a line that ends going up is a bar under another.
        nested = text.endswith(_CURSOR_UP)
        text = without_ansi(text).strip()
        if not text:
            return None
    rank = None
    if text[0] == "[":
        rank, text = split_rank(text)
        if not text:
            return None
    reading = _read(text)
    if reading is not None:
        reading.rank = rank
        reading.nested = nested and reading.progress is not None
    return reading


def _read(text: str) -> Reading | None:
    if text[0] == "{" and text[-1] == "}":
        return _object(text)
    if text.startswith("step") and "|" in text:
        piped = _piped(text)
        if piped is not None:
            return piped
    if ("/s" in text or "s/" in text) and "[" in text:
        bar = _tqdm(text)
        if bar is not None:
            return bar
    if text[0].isdigit() and ("/step" in text or "/sample" in text):
        keras = _keras(text)
        if keras is not None:
            return keras
    how_long = _how_long(text)
    if how_long is not None:
        return how_long
    if text.startswith("==> rtrain: attempt "):
        match = _ATTEMPT.match(text)
        return Reading(attempt=int(match[1])) if match else None
    values = read_free_text(text)
    return Reading(values) if values else None


def _how_long(text: str) -> Reading | None:
    """Keras' line opening an epoch (`Epoch 2/4`), Lightning's end of a whole fit."""
    if text.startswith("Epoch "):
        epoch_line = _EPOCH_LINE.fullmatch(text)
        if epoch_line is not None:
            return Reading(epoch=int(epoch_line[1]), epochs=int(epoch_line[2]))
    if "`Trainer.fit` stopped" in text:
        stopped = _FIT_STOPPED.search(text)
        if stopped is not None:
            return Reading(fit_end=stopped[1])
    return None


def _number(text: str) -> float:
    return float(text.replace("Infinity", "inf"))


def _fields(pairs: list[tuple[str, str]]) -> dict[str, float]:
    values: dict[str, float] = {}
    for name, number in pairs[:MAX_FIELDS]:
        if name not in NOT_METRICS:
            values[name] = _number(number)
    return values


def _piped(text: str) -> Reading | None:
    pairs = []
    for part in text.split("|", MAX_FIELDS)[:MAX_FIELDS]:
        match = _PIPE_FIELD.fullmatch(part)
        if match is None:
            return None  # not this format after all: every field must be `name number`
        pairs.append((match[1], match[2]))
    values = _fields(pairs)
    return Reading(values) if "step" in values and len(values) > 1 else None


def _object(text: str) -> Reading | None:
    try:
        decoded = json.loads(text)
    except ValueError:
        # Not JSON: a Python dict as HF Trainer prints it (single quotes, nan).
        values = _fields([(name, number) for name, _, number in _DICT_FIELD.findall(text)])
    else:
        if not isinstance(decoded, dict):
            return None
        values = {}
        for name, value in list(decoded.items())[: MAX_FIELDS * 4]:
            if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME or name in NOT_METRICS:
                continue
            # A JSON string stays a string (`"run": "42"` is a name): only Python's dicts
            # (transformers 5) quote their numbers.
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[name] = float(value)
            if len(values) >= MAX_FIELDS:
                break
    return Reading(values) if values else None


def _tqdm(text: str) -> Reading | None:
    match = _TQDM.search(text)
    if match is None:
        return None
    n = float(match["n"]) * _SUFFIX[match["nsuffix"]]
    total = float(match["total"]) * _SUFFIX[match["tsuffix"]] if match["total"] else None
    rate = None if match["rate"] == "?" else _safe_float(match["rate"])
    if rate is not None and match["unit"].startswith("s/"):
        rate = 1 / rate if rate else None
    progress = Progress(
        n=n,
        total=total,
        rate=rate,
        remaining=_clock(match["remaining"]),
        elapsed=_clock(match["elapsed"]),
    )
    values = _fields(_POSTFIX_FIELD.findall(match["postfix"].lstrip(",")))
    epoch = _BAR_EPOCH.search(text, 0, match.start()) if match.start() else None
    label = _DIGITS.sub("#", text[: match.start()]).strip()
    return Reading(values, progress, epoch=int(epoch[1]) if epoch else None, label=label)


def _keras(text: str) -> Reading | None:
    match = _KERAS.fullmatch(text)
    if match is None:
        return None
    per_step = int(match["per"]) / _PER_SECOND[match["unit"]]
    progress = Progress(
        n=float(match["n"]),
        total=None if match["total"] == "Unknown" else float(match["total"]),
        rate=1 / per_step if per_step else None,
    )
    values = _fields(_KERAS_FIELD.findall(match["fields"]))
    if values:
        values["step"] = progress.n  # within its epoch: run_series.py counts on across them
    return Reading(values, progress, in_epoch=True, label="keras")


def _safe_float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _clock(text: str | None) -> float | None:
    """Seconds in tqdm's `MM:SS` or `H:MM:SS`; None for `?`."""
    if not text or "?" in text:
        return None
    seconds = 0.0
    for part in text.split(":"):
        if not part.isdigit():
            return None
        seconds = seconds * 60 + int(part)
    return seconds
