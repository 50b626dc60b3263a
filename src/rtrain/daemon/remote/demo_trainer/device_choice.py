"""Which backend (torch or pure Python) and which device the trainer runs on."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .config import BACKENDS, Config, device_problem
from .messages import one_line, warn
from .parameters import TrainState
from .python_model import PythonModel
from .torch_model import TorchModel

if TYPE_CHECKING:  # an alias for annotations only, which stay strings on Python 3.8
    Model = PythonModel | TorchModel


def import_torch() -> Any | None:
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except Exception:  # ImportError, or a broken install raising anything at import
        return None
    if "OMP_NUM_THREADS" not in os.environ:
        # The model is tiny: on a CPU, threads only fight over it (4x slower on 2 busy cores).
        torch.set_num_threads(1)
    return torch


def choose_backend(config: Config) -> tuple[str, Any | None]:
    """(backend name, torch module or None): env RTRAIN_DEMO_BACKEND, then config, then auto."""
    wanted = os.environ.get("RTRAIN_DEMO_BACKEND", "").strip().lower() or config.backend
    if wanted not in BACKENDS:
        warn(f"RTRAIN_DEMO_BACKEND={wanted!r} is not one of auto, torch, python; using auto")
        wanted = "auto"
    if wanted == "python":
        return "python", None
    torch = import_torch()
    if torch is None:
        if wanted == "torch":
            warn(
                "backend 'torch' was asked for but torch cannot be imported; "
                "using the pure-Python backend"
            )
        return "python", None
    return "torch", torch


def requested_device(config: Config) -> tuple[str, str]:
    """(device, where it came from): env RTRAIN_DEVICE, then config `device`."""
    from_env = os.environ.get("RTRAIN_DEVICE", "").strip().lower()
    if from_env:
        if device_problem(from_env) is not None:
            warn(
                f"RTRAIN_DEVICE={from_env!r} is not one of auto, cuda, cuda:N, mps, cpu; using auto"
            )
            return "auto", "RTRAIN_DEVICE"
        return from_env, "RTRAIN_DEVICE"
    return config.device, "config"


def _mps_available(torch: Any) -> bool:
    backends = getattr(torch, "backends", None)
    mps = getattr(backends, "mps", None)
    try:
        return bool(mps is not None and mps.is_available())
    except Exception:
        return False


def resolve_torch_device(torch: Any, wanted: str, origin: str) -> str:
    """The device to try first; an unavailable explicit request falls back to cpu, warning once."""
    if wanted == "auto":
        if _cuda_available(torch):
            return "cuda"
        return "mps" if _mps_available(torch) else "cpu"
    if wanted.startswith("cuda"):
        if not _cuda_available(torch):
            warn(
                f"device {wanted!r} (from {origin}) is not available: torch sees no CUDA "
                "device; falling back to cpu"
            )
            return "cpu"
        if ":" in wanted and int(wanted.split(":")[1]) >= torch.cuda.device_count():
            warn(
                f"device {wanted!r} (from {origin}) does not exist: torch sees "
                f"{torch.cuda.device_count()} CUDA device(s); falling back to cpu"
            )
            return "cpu"
        return wanted
    if wanted == "mps" and not _mps_available(torch):
        warn(f"device 'mps' (from {origin}) is not available; falling back to cpu")
        return "cpu"
    return wanted


def _cuda_available(torch: Any) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def build_model(
    backend: str,
    torch: Any | None,
    state: TrainState,
    vocab_size: int,
    config: Config,
    device: str,
) -> Model:
    if backend == "python":
        return PythonModel(state, vocab_size, config.hidden)
    assert torch is not None
    if device != "cpu":
        try:
            model = TorchModel(torch, state, vocab_size, device)
            model.probe(config.context)
            return model
        except Exception as error:
            warn(f"device {device!r} failed ({one_line(error)}); falling back to cpu")
    return TorchModel(torch, state, vocab_size, "cpu")
