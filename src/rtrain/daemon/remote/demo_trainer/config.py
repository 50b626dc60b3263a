"""The trainer's settings: defaults, and config.yaml's keys checked with the line they came from."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import Any

from .messages import UserError, warn
from .yaml_subset import YamlDocument, parse_yaml_subset

DEVICES = ("auto", "cuda", "mps", "cpu")
BACKENDS = ("auto", "torch", "python")


class Config:
    """The trainer's settings with their defaults (docs/demo-trainer.md lists them)."""

    def __init__(self) -> None:
        self.steps = 300
        self.learning_rate = 0.01
        self.batch_size = 32
        self.context = 3
        self.hidden = 32
        self.seed = 1234
        self.checkpoint_every = 50
        self.log_every = 10
        self.device = "auto"
        self.backend = "auto"
        self.sleep_per_step = 0.0
        self.model_name = "rtrain-demo-char-mlp"


def _want_int(value: Any, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number from {low} to {high}"
    if not low <= value <= high:
        return f"must be from {low} to {high}, not {value}"
    return None


def _want_number(value: Any, low: float, low_inclusive: bool, high: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return "must be a number"
    too_low = value < low or (value == low and not low_inclusive)
    if too_low or value > high:
        bound = ">=" if low_inclusive else ">"
        return f"must be {bound} {low:g} and <= {high:g}, not {value:g}"
    return None


def device_problem(value: Any) -> str | None:
    if isinstance(value, str) and (value in DEVICES or re.match(r"cuda:[0-9]+$", value)):
        return None
    return "must be one of auto, cuda, cuda:N, mps, cpu"


_CONFIG_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "steps": lambda v: _want_int(v, 1, 10_000_000),
    "learning_rate": lambda v: _want_number(v, 0.0, False, 10.0),
    "batch_size": lambda v: _want_int(v, 1, 65_536),
    "context": lambda v: _want_int(v, 1, 64),
    "hidden": lambda v: _want_int(v, 1, 4096),
    "seed": lambda v: _want_int(v, 0, 2**63 - 1),
    "checkpoint_every": lambda v: _want_int(v, 1, 10_000_000),
    "log_every": lambda v: _want_int(v, 1, 10_000_000),
    "device": device_problem,
    "backend": lambda v: None if v in BACKENDS else "must be one of auto, torch, python",
    "sleep_per_step": lambda v: _want_number(v, 0.0, True, 3600.0),
    "model_name": lambda v: None if isinstance(v, (str, int, float)) else "must be a string",
}


def config_from_document(doc: YamlDocument, source: str) -> Config:
    """Apply known keys (validated, errors name the line); unknown keys only warn."""
    config = Config()
    for key, value in doc.values.items():
        line = doc.lines[key]
        check = _CONFIG_CHECKS.get(key)
        if check is None:
            warn(f"{source} line {line}: unknown key {key!r} (ignored by the demo trainer)")
            continue
        if value is None:
            continue  # `key:` or `key: null` keeps the default
        problem = check(value)
        if problem is not None:
            raise UserError(f"{source} line {line}: {key} {problem} (got {value!r})")
        if key == "learning_rate" or key == "sleep_per_step":
            value = float(value)
        elif key == "model_name":
            value = str(value)
        setattr(config, key, value)
    return config


def load_config(path: str | None) -> Config:
    if path is None:
        return Config()
    try:
        with open(path, encoding="utf-8-sig") as handle:  # -sig: tolerate a byte-order mark
            text = handle.read()
    except FileNotFoundError:
        raise UserError(f"config file {path!r} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read config file {path!r}: {error}") from None
    name = os.path.basename(path)
    return config_from_document(parse_yaml_subset(text, name), name)
