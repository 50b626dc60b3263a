"""The model's parameters as plain lists of floats, which both backends read and write.

x = the `context` previous characters (one-hot each), h = tanh(W1 x + b1),
p(next char) = softmax(W2 h + b2). W1 is stored as one row per (position, character), so
W1 x is a sum of `context` rows.
"""

# Python 3.8's zip() has no strict= argument.
# ruff: noqa: B905

from __future__ import annotations

import math
import random
from operator import mul
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an alias for annotations only, which stay strings on Python 3.8
    Params = dict[str, Any]  # name -> list of floats, or list of rows of floats


PARAM_NAMES = ("W1", "b1", "W2", "b2")
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-8


def init_params(rng: random.Random, vocab_size: int, context: int, hidden: int) -> Params:
    w1_scale = 1.0 / math.sqrt(context)
    w2_scale = 0.5 / math.sqrt(hidden)  # small outputs: the first loss is close to ln(vocab)
    return {
        "W1": [
            [rng.gauss(0.0, w1_scale) for _ in range(hidden)] for _ in range(context * vocab_size)
        ],
        "b1": [0.0] * hidden,
        "W2": [[rng.gauss(0.0, w2_scale) for _ in range(hidden)] for _ in range(vocab_size)],
        "b2": [0.0] * vocab_size,
    }


def zeros_like(params: Params) -> Params:
    out: Params = {}
    for name, value in params.items():
        if value and isinstance(value[0], list):
            out[name] = [[0.0] * len(row) for row in value]
        else:
            out[name] = [0.0] * len(value)
    return out


def param_count(params: Params) -> int:
    total = 0
    for value in params.values():
        total += (
            sum(len(row) for row in value) if value and isinstance(value[0], list) else len(value)
        )
    return total


def next_char_probs(params: Params, context_ids: list[int], vocab_size: int) -> list[float]:
    """Forward pass for one context (used for sampling; training has its own loops)."""
    pre = list(params["b1"])
    for position, char_id in enumerate(context_ids):
        pre = [a + w for a, w in zip(pre, params["W1"][position * vocab_size + char_id])]
    hidden = [math.tanh(x) for x in pre]
    logits = [b + sum(map(mul, row, hidden)) for b, row in zip(params["b2"], params["W2"])]
    top = max(logits)
    exps = [math.exp(z - top) for z in logits]
    total = sum(exps)
    return [e / total for e in exps]


class TrainState:
    """Weights and Adam moments as plain lists (a checkpoint adds the step and the RNG)."""

    def __init__(self, params: Params, adam_m: Params, adam_v: Params, adam_t: int) -> None:
        self.params = params
        self.adam_m = adam_m
        self.adam_v = adam_v
        self.adam_t = adam_t
