"""Checkpoints (checkpoints/step-NNNNNN.json, the newest two kept) and metrics.jsonl in step."""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

from .atomic_files import write_atomically
from .messages import one_line, warn
from .parameters import TrainState

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_NAME = re.compile(r"step-([0-9]+)\.json$")
CHECKPOINT_FORMAT = "rtrain-demo-checkpoint"
CHECKPOINTS_KEPT = 2
METRICS_FILE = "metrics.jsonl"


def checkpoint_paths() -> list[tuple[int, str]]:
    """(step, path) of every checkpoint under a final name, newest first."""
    if not os.path.isdir(CHECKPOINT_DIR):
        return []
    found = []
    for name in os.listdir(CHECKPOINT_DIR):
        match = CHECKPOINT_NAME.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(CHECKPOINT_DIR, name)))
    return sorted(found, reverse=True)


def save_checkpoint(
    step: int,
    state: TrainState,
    rng: random.Random,
    last_loss: float | None,
    model_info: dict[str, Any],
) -> None:
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    version, internal, gauss_next = rng.getstate()
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": 1,
        "step": step,
        "last_loss": last_loss,
        "model": model_info,
        "params": state.params,
        "adam": {"t": state.adam_t, "m": state.adam_m, "v": state.adam_v},
        "rng_state": [version, list(internal), gauss_next],
    }
    path = os.path.join(CHECKPOINT_DIR, f"step-{step:06d}.json")
    write_atomically(path, json.dumps(payload, separators=(",", ":")).encode())
    for _, old in checkpoint_paths()[CHECKPOINTS_KEPT:]:
        try:
            os.remove(old)
        except OSError:
            pass


def load_latest_checkpoint() -> dict[str, Any] | None:
    """The newest readable checkpoint; an unreadable one is skipped with a warning."""
    for step, path in checkpoint_paths():
        try:
            with open(path, encoding="utf-8") as handle:
                payload = json.load(handle)
            if (
                not isinstance(payload, dict)
                or payload.get("format") != CHECKPOINT_FORMAT
                or payload.get("step") != step
            ):
                raise ValueError("not a demo-trainer checkpoint")
            payload["path"] = path
            return dict(payload)
        except (OSError, ValueError) as error:
            warn(f"skipping unreadable checkpoint {path} ({one_line(error)})")
    return None


def restore_rng(saved: list[Any]) -> random.Random:
    rng = random.Random()
    rng.setstate((saved[0], tuple(saved[1]), saved[2]))
    return rng


def trim_metrics(up_to_step: int | None) -> None:
    """Keep metrics.jsonl in step with the checkpoint we start from (none: start empty)."""
    if not os.path.exists(METRICS_FILE):
        return
    kept: list[str] = []
    if up_to_step is not None:
        with open(METRICS_FILE, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                    if isinstance(row, dict) and int(row["step"]) <= up_to_step:
                        kept.append(json.dumps(row) + "\n")
                except (ValueError, KeyError, TypeError):
                    continue  # e.g. a line cut short by a kill
    write_atomically(METRICS_FILE, "".join(kept).encode())
