"""The points of a sweep, from a grid (`--grid lr=1e-4,3e-4`), ranges (`--range
lr=1e-5:1e-3:log`) and `--samples N` random picks, and a command with a point's values in
it. Pure and standard library only: the CLI, the API and the Hydra launcher share it.

A value must be plain (letters, digits and `._+-:/=@%,`): it goes into an argv word, and a
word of the user's command may well be handed to a shell (`bash -c "... {lr}"`), so no
value may carry a character a shell would read.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import Kind, app_error

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_VALUE = re.compile(r"[A-Za-z0-9._+\-:/=@%,]{1,200}")
# Placeholders rtrain fills itself (command_template.py); a parameter may not take them.
RESERVED_NAMES = frozenset({"python", "config", "dataset", "run_dir", "gpus", "torchrun"})
MAX_POINTS = 10000


@dataclass(frozen=True)
class Range:
    """A parameter drawn from [low, high]: uniformly, or on a log scale; `integer` rounds."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def pick(self, rng: random.Random) -> str:
        if self.log:
            value = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            value = rng.uniform(self.low, self.high)
        return str(round(value)) if self.integer else f"{value:.4g}"


def _refuse(message: str) -> Exception:
    return app_error(Kind.INVALID_COMMAND, message)


def param_name(name: str) -> str:
    if not _NAME.fullmatch(name) or name in RESERVED_NAMES:
        raise _refuse(
            f"parameter name {name!r} is not usable: letters, digits and _, not starting with "
            "a digit, and none of rtrain's own placeholders (python, config, dataset, "
            "run_dir, gpus, torchrun)."
        )
    return name


def param_value(name: str, value: str) -> str:
    if not _VALUE.fullmatch(value):
        raise _refuse(
            f"value {value!r} of {name} is not usable: letters, digits and ._+-:/=@%, only "
            "(a value lands in the command, which a shell may read)."
        )
    return value


def parse_grid(text: str) -> tuple[str, list[str]]:
    """`lr=1e-4,3e-4,1e-3` -> ("lr", ["1e-4", "3e-4", "1e-3"])."""
    name, sep, values = text.partition("=")
    if not sep or not values:
        raise _refuse(f"--grid {text!r} is not NAME=V1,V2,...")
    name = param_name(name.strip())
    return name, [param_value(name, v.strip()) for v in values.split(",")]


def parse_range(text: str) -> tuple[str, Range]:
    """`lr=1e-5:1e-3:log` (or `:int`, or neither) -> ("lr", Range(...))."""
    name, sep, spec = text.partition("=")
    parts = spec.split(":")
    if not sep or len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("log", "int")):
        raise _refuse(f"--range {text!r} is not NAME=LOW:HIGH, NAME=LOW:HIGH:log or :int")
    name = param_name(name.strip())
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise _refuse(f"--range {text!r}: LOW and HIGH must be numbers") from None
    log = len(parts) == 3 and parts[2] == "log"
    if not low < high or (log and low <= 0):
        raise _refuse(f"--range {text!r}: LOW must be below HIGH (and above 0 for :log)")
    return name, Range(low, high, log=log, integer=len(parts) == 3 and parts[2] == "int")


def points(
    grid: Mapping[str, Sequence[str]],
    ranges: Mapping[str, Range] | None = None,
    samples: int | None = None,
    seed: int | None = None,
) -> list[dict[str, str]]:
    """Every combination of the grid; with `samples`, that many random points instead,
    each grid parameter picked among its values and each range drawn from it."""
    ranges = ranges or {}
    both = set(grid) & set(ranges)
    if both:
        raise _refuse(f"{', '.join(sorted(both))}: both a grid and a range; give one.")
    if ranges and samples is None:
        raise _refuse("--range needs --samples N (how many random points to draw).")
    if samples is not None:
        if not 1 <= samples <= MAX_POINTS:
            raise _refuse(f"--samples must be between 1 and {MAX_POINTS}.")
        rng = random.Random(seed)
        return [
            {
                **{name: rng.choice(list(values)) for name, values in grid.items()},
                **{name: spec.pick(rng) for name, spec in ranges.items()},
            }
            for _ in range(samples)
        ]
    if not grid:
        raise _refuse("a sweep needs parameters: --grid NAME=V1,V2 (or a sweep file).")
    names = list(grid)
    count = math.prod(len(grid[n]) for n in names)
    if count > MAX_POINTS:
        raise _refuse(f"the grid has {count} points; at most {MAX_POINTS}.")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid.values())]


def filled(command: Sequence[str], params: Mapping[str, str]) -> list[str]:
    """The command with `{name}` of each parameter replaced by its value."""
    words = []
    for word in command:
        for name, value in params.items():
            word = word.replace("{" + name + "}", value)
        words.append(word)
    return words


def unused(command: Sequence[str], names: Sequence[str]) -> list[str]:
    """Parameters the command never names: a sweep over them would run the same thing."""
    text = "\n".join(command)
    return [name for name in names if "{" + name + "}" not in text]
