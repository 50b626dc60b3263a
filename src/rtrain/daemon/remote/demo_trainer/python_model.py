"""The model and its Adam update in pure Python."""

# Python 3.8's zip() has no strict= argument.
# ruff: noqa: B905

from __future__ import annotations

import math
from operator import mul

from .parameters import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, TrainState


class PythonModel:
    """The model in pure Python; list comprehensions and map() keep the inner loops in C."""

    backend = "python"
    device = "cpu"

    def __init__(self, state: TrainState, vocab_size: int, hidden: int) -> None:
        self.state = state
        self.vocab_size = vocab_size
        self.hidden = hidden

    def export_state(self) -> TrainState:
        return self.state

    def train_step(self, contexts: list[list[int]], targets: list[int], lr: float) -> float:
        params = self.state.params
        w1, b1, w2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
        vocab = self.vocab_size
        tanh, exp, log = math.tanh, math.exp, math.log
        inv_batch = 1.0 / len(targets)

        hiddens: list[list[float]] = []
        dlogits: list[list[float]] = []
        total_loss = 0.0
        for context_ids, target in zip(contexts, targets):
            pre = b1
            for position, char_id in enumerate(context_ids):
                pre = [a + w for a, w in zip(pre, w1[position * vocab + char_id])]
            hidden = [tanh(x) for x in pre]
            logits = [b + sum(map(mul, row, hidden)) for b, row in zip(b2, w2)]
            top = max(logits)
            exps = [exp(z - top) for z in logits]
            norm = sum(exps)
            total_loss += log(norm) - (logits[target] - top)
            scale = inv_batch / norm
            dlogit = [e * scale for e in exps]
            dlogit[target] -= inv_batch
            hiddens.append(hidden)
            dlogits.append(dlogit)

        w2_columns = list(zip(*w2))  # hidden tuples of vocab weights
        grad_b1 = [0.0] * self.hidden
        grad_w1: dict[int, list[float]] = {}
        for context_ids, hidden, dlogit in zip(contexts, hiddens, dlogits):
            dpre = [
                sum(map(mul, dlogit, column)) * (1.0 - h * h)
                for column, h in zip(w2_columns, hidden)
            ]
            grad_b1 = [a + b for a, b in zip(grad_b1, dpre)]
            for position, char_id in enumerate(context_ids):
                row = position * vocab + char_id
                previous = grad_w1.get(row)
                grad_w1[row] = dpre if previous is None else [a + b for a, b in zip(previous, dpre)]
        dlogit_by_char = list(zip(*dlogits))  # vocab tuples of batch values
        hidden_by_unit = list(zip(*hiddens))  # hidden tuples of batch values
        grad_w2 = [[sum(map(mul, d, h)) for h in hidden_by_unit] for d in dlogit_by_char]
        grad_b2 = [sum(d) for d in dlogit_by_char]

        state = self.state
        state.adam_t += 1
        t = state.adam_t
        correction2 = math.sqrt(1.0 - ADAM_BETA2**t)
        step_size = lr * correction2 / (1.0 - ADAM_BETA1**t)
        eps = ADAM_EPS * correction2  # same update as torch.optim.Adam, rearranged
        m, v = state.adam_m, state.adam_v
        m["b1"], v["b1"], params["b1"] = _adam_row(b1, grad_b1, m["b1"], v["b1"], step_size, eps)
        m["b2"], v["b2"], params["b2"] = _adam_row(b2, grad_b2, m["b2"], v["b2"], step_size, eps)
        for index in range(len(w2)):
            m["W2"][index], v["W2"][index], w2[index] = _adam_row(
                w2[index], grad_w2[index], m["W2"][index], v["W2"][index], step_size, eps
            )
        for index in range(len(w1)):
            m["W1"][index], v["W1"][index], w1[index] = _adam_row(
                w1[index], grad_w1.get(index), m["W1"][index], v["W1"][index], step_size, eps
            )
        return total_loss * inv_batch


def _adam_row(
    param: list[float],
    grad: list[float] | None,
    m: list[float],
    v: list[float],
    step_size: float,
    eps: float,
) -> tuple[list[float], list[float], list[float]]:
    b1, b2 = ADAM_BETA1, ADAM_BETA2
    if grad is None:  # no gradient this step: moments decay, the weight still moves
        m = [b1 * a for a in m]
        v = [b2 * a for a in v]
    else:
        c1, c2 = 1.0 - b1, 1.0 - b2
        m = [b1 * a + c1 * g for a, g in zip(m, grad)]
        v = [b2 * a + c2 * g * g for a, g in zip(v, grad)]
    sqrt = math.sqrt
    param = [p - step_size * a / (sqrt(b) + eps) for p, a, b in zip(param, m, v)]
    return m, v, param
