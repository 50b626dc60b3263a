"""Data-parallel training under torchrun: one process per rank, gradients averaged.

torchrun (torch.distributed.run) starts the ranks with WORLD_SIZE, RANK, LOCAL_RANK and a
rendezvous in their environment. Every rank draws the same batches from the same generator
(so the generator's state in rank 0's checkpoint is every rank's) and trains on its own
share of them; averaging the gradients keeps the weights identical on every rank. Rank 0
alone prints, writes metrics, checkpoints and the model. A stop signal that reaches one rank
is agreed on by all at the next step, so no rank waits on a collective the others left.
"""

from __future__ import annotations

import os
from typing import Any


class World:
    """The ranks of this run; one rank (and no torch.distributed) outside torchrun."""

    def __init__(self) -> None:
        self.size = _env_int("WORLD_SIZE", 1)
        self.rank = _env_int("RANK", 0)
        self.local_rank = _env_int("LOCAL_RANK", 0)
        self.torch: Any = None

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def join(self, torch: Any, device: str) -> None:
        """Join the process group: nccl for CUDA tensors, gloo for CPU ones."""
        self.torch = torch
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(device)
        torch.distributed.init_process_group(backend=backend)

    def leave(self) -> None:
        if self.torch is not None and self.torch.distributed.is_initialized():
            self.torch.distributed.destroy_process_group()

    def average(self, tensors: list[Any]) -> None:
        """Each tensor becomes its mean over the ranks, in place."""
        if self.torch is None:
            return
        for tensor in tensors:
            self.torch.distributed.all_reduce(tensor)
            tensor.div_(self.size)

    def agree(self, loss: float, stop_signal: int, device: str) -> tuple[float, int]:
        """(mean loss over the ranks, the highest stop signal any rank received, or 0)."""
        if self.torch is None:
            return loss, stop_signal
        torch = self.torch
        dist = torch.distributed
        values = torch.tensor([loss, float(stop_signal)], dtype=torch.float64, device=device)
        signals = values[1:].clone()
        dist.all_reduce(values[:1])
        dist.all_reduce(signals, op=dist.ReduceOp.MAX)
        return float(values[0].item()) / self.size, int(signals[0].item())

    def same_start(self, step: int, device: str) -> bool:
        """Whether every rank starts from the same step (all resumed the same checkpoint)."""
        if self.torch is None:
            return True
        torch = self.torch
        dist = torch.distributed
        low = torch.tensor([step], dtype=torch.int64, device=device)
        high = low.clone()
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        return bool(low.item() == high.item())

    def own_share(self, contexts: list[list[int]], targets: list[int]) -> tuple[Any, Any]:
        """This rank's slice of a batch drawn `size` times as large."""
        share = len(targets) // self.size
        begin = self.rank * share
        return contexts[begin : begin + share], targets[begin : begin + share]


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default
