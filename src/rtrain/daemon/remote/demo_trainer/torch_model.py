"""The same model and update with torch tensors on a device."""

# Python 3.8's zip() has no strict= argument.
# ruff: noqa: B905

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .parameters import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, PARAM_NAMES, TrainState

if TYPE_CHECKING:
    from .distributed import World
    from .parameters import Params


class TorchModel:
    """The same model and update with torch tensors on a device."""

    backend = "torch"

    def __init__(
        self,
        torch: Any,
        state: TrainState,
        vocab_size: int,
        device: str,
        world: World | None = None,
    ) -> None:
        self.torch = torch
        self.world = world
        self.vocab_size = vocab_size
        self.device = device
        self.adam_t = state.adam_t

        def tensors(values: Params) -> dict[str, Any]:
            return {
                name: torch.tensor(values[name], dtype=torch.float32, device=device)
                for name in PARAM_NAMES
            }

        self.params = tensors(state.params)
        self.adam_m = tensors(state.adam_m)
        self.adam_v = tensors(state.adam_v)
        for tensor in self.params.values():
            tensor.requires_grad_(True)

    def export_state(self) -> TrainState:
        def lists(values: dict[str, Any]) -> Params:
            return {name: values[name].detach().cpu().tolist() for name in PARAM_NAMES}

        return TrainState(lists(self.params), lists(self.adam_m), lists(self.adam_v), self.adam_t)

    def probe(self, context: int) -> None:
        """One forward and backward pass without an update: a device that cannot run the
        model (missing kernels, unsupported dtypes) fails here, before the first step."""
        self._loss_and_grads([[0] * context], [0])

    def _loss_and_grads(self, contexts: list[list[int]], targets: list[int]) -> tuple[Any, Any]:
        torch = self.torch
        vocab = self.vocab_size
        rows = [[position * vocab + c for position, c in enumerate(ids)] for ids in contexts]
        row_index = torch.tensor(rows, dtype=torch.long, device=self.device)
        target = torch.tensor(targets, dtype=torch.long, device=self.device)
        p = self.params
        hidden = torch.tanh(p["W1"][row_index].sum(dim=1) + p["b1"])
        logits = hidden @ p["W2"].t() + p["b2"]
        loss = torch.nn.functional.cross_entropy(logits, target)
        grads = torch.autograd.grad(loss, [p[name] for name in PARAM_NAMES])
        return loss, grads

    def train_step(self, contexts: list[list[int]], targets: list[int], lr: float) -> float:
        torch = self.torch
        p = self.params
        loss, grads = self._loss_and_grads(contexts, targets)
        if self.world is not None:
            self.world.average(list(grads))
        self.adam_t += 1
        t = self.adam_t
        correction2 = math.sqrt(1.0 - ADAM_BETA2**t)
        step_size = lr * correction2 / (1.0 - ADAM_BETA1**t)
        eps = ADAM_EPS * correction2
        with torch.no_grad():
            for name, grad in zip(PARAM_NAMES, grads):
                m, v = self.adam_m[name], self.adam_v[name]
                m.mul_(ADAM_BETA1).add_(grad, alpha=1.0 - ADAM_BETA1)
                v.mul_(ADAM_BETA2).addcmul_(grad, grad, value=1.0 - ADAM_BETA2)
                p[name].sub_(step_size * m / (v.sqrt() + eps))
        return float(loss.item())
