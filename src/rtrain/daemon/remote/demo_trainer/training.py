"""The training loop: where it starts, each step, progress lines, checkpoints, the end."""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
from typing import IO, TYPE_CHECKING, Any

from .atomic_files import remove_stale_temp_files
from .checkpoints import (
    CHECKPOINT_DIR,
    METRICS_FILE,
    load_latest_checkpoint,
    restore_rng,
    save_checkpoint,
    trim_metrics,
)
from .config import Config, load_config
from .dataset import Corpus, Dataset, load_dataset
from .device_choice import build_model, choose_backend, requested_device, resolve_torch_device
from .distributed import World
from .messages import PROGRAM, UserError, one_line, say, set_rank, warn
from .output import OUTPUT_DIR, sample_text, save_output
from .parameters import TrainState, init_params, param_count, zeros_like
from .stop_flag import StopFlag
from .torch_model import TorchModel

if TYPE_CHECKING:
    from .device_choice import Model


class StartPoint:
    """Where training begins: a fresh model, or the newest checkpoint in the run dir."""

    def __init__(self, config: Config, dataset: Dataset, model_info: dict[str, Any]) -> None:
        checkpoint = load_latest_checkpoint()
        self.resumed = checkpoint is not None
        if checkpoint is None:
            self.rng = random.Random(config.seed)
            params = init_params(self.rng, len(model_info["vocab"]), config.context, config.hidden)
            self.state = TrainState(params, zeros_like(params), zeros_like(params), 0)
            self.step = 0
            self.last_loss: float | None = None
            return
        saved_model = checkpoint.get("model", {})
        for key in ("context", "hidden", "vocab"):
            if saved_model.get(key) != model_info[key]:
                what = "set of characters (another dataset)" if key == "vocab" else key
                raise UserError(
                    f"{checkpoint['path']} was trained with a different {what} than this "
                    f"config and dataset; delete {CHECKPOINT_DIR}/ to start over"
                )
        if saved_model.get("dataset_sha256", dataset.sha256) != dataset.sha256:
            warn("the dataset changed since the checkpoint was written; continuing with it")
        adam = checkpoint["adam"]
        self.state = TrainState(checkpoint["params"], adam["m"], adam["v"], int(adam["t"]))
        self.rng = restore_rng(checkpoint["rng_state"])
        self.step = int(checkpoint["step"])
        self.last_loss = checkpoint.get("last_loss")


def pick_model(config: Config, state: TrainState, vocab_size: int, world: World) -> Model:
    backend, torch = choose_backend(config)
    wanted_device, origin = requested_device(config)
    if world.distributed:
        return _distributed_model(config, state, vocab_size, world, backend, torch)
    if backend == "python":
        if wanted_device not in ("auto", "cpu"):
            warn(
                f"device {wanted_device!r} (from {origin}) ignored: the pure-Python backend "
                "runs on cpu"
            )
        return build_model(backend, None, state, vocab_size, config, "cpu")
    device = resolve_torch_device(torch, wanted_device, origin)
    return build_model(backend, torch, state, vocab_size, config, device)


def _distributed_model(
    config: Config, state: TrainState, vocab_size: int, world: World, backend: str, torch: Any
) -> TorchModel:
    """The torch model of this rank, in the process group: each rank on a GPU of its own
    (LOCAL_RANK among those CUDA_VISIBLE_DEVICES shows), or every rank on cpu."""
    if backend != "torch":
        raise UserError(
            f"under torchrun ({world.size} ranks) the demo trainer needs torch, and "
            "torch cannot be imported here (or backend python was asked for)"
        )
    wanted_device, origin = requested_device(config)
    device = resolve_torch_device(torch, wanted_device, origin)
    if device.startswith("cuda"):
        count = torch.cuda.device_count()
        if world.local_rank >= count:
            raise UserError(
                f"rank {world.rank} has local rank {world.local_rank}, but torch sees only "
                f"{count} CUDA device(s); start fewer ranks per node or give the run more GPUs"
            )
        device = f"cuda:{world.local_rank}"
    elif device != "cpu":
        warn(f"device {device!r} cannot be shared between ranks; using cpu")
        device = "cpu"
    model = build_model(backend, torch, state, vocab_size, config, device)
    assert isinstance(model, TorchModel)
    world.join(torch, model.device)
    model.world = world
    return model


def step_on_cpu_after_device_failure(
    model: TorchModel, start: StartPoint, step: int, error: Exception, vocab_size: int
) -> TorchModel:
    """A torch model on cpu with the state of `model`, whose device failed in a step."""
    warn(f"device {model.device!r} failed during training ({one_line(error)}); falling back to cpu")
    try:
        # Before any step succeeded, the start state is the one to trust.
        state = start.state if step == start.step else model.export_state()
    except Exception:
        raise UserError(
            f"device {model.device!r} failed at step {step + 1} and its state cannot be read "
            "back; start the run again to resume from the last checkpoint"
        ) from error
    return TorchModel(model.torch, state, vocab_size, "cpu")


def train(args: argparse.Namespace, stop: StopFlag) -> int:
    world = World()
    set_rank(world.rank, world.size)
    try:
        return _train(args, stop, world)
    finally:
        world.leave()


def _train(args: argparse.Namespace, stop: StopFlag, world: World) -> int:
    config = load_config(args.config)
    if args.steps is not None:
        if args.steps < 1:
            raise UserError(f"--steps must be at least 1, not {args.steps}")
        config.steps = args.steps
    dataset = load_dataset(args.dataset)
    corpus = Corpus(dataset.records)
    model_info = {
        "architecture": "char-mlp",
        "context": config.context,
        "hidden": config.hidden,
        "vocab": corpus.vocab,
        "dataset_sha256": dataset.sha256,
    }
    if world.is_main:  # the one rank that writes files
        remove_stale_temp_files(CHECKPOINT_DIR)
        remove_stale_temp_files(OUTPUT_DIR)
        remove_stale_temp_files(".", METRICS_FILE)
    start = StartPoint(config, dataset, model_info)
    if world.is_main:
        trim_metrics(start.step if start.resumed else None)
    model = pick_model(config, start.state, len(corpus.vocab), world)
    if not world.same_start(start.step, model.device):
        raise UserError(
            f"the ranks found different checkpoints (this one starts at step {start.step}); "
            f"is {CHECKPOINT_DIR}/ shared by every rank?"
        )
    run_id = os.environ.get("RTRAIN_RUN_ID")
    _say_header(config, dataset, corpus, model, start, world, run_id)
    loop = _Loop(config, corpus, world, start, model, model_info)
    stopping = loop.run(stop)
    if stopping:
        return loop.stopped(stopping)
    if loop.step != loop.saved_step:
        loop.checkpoint_now()
    if not world.is_main:
        return 0
    return _save_final(loop, dataset, run_id)


def _say_header(
    config: Config,
    dataset: Dataset,
    corpus: Corpus,
    model: Model,
    start: StartPoint,
    world: World,
    run_id: str | None,
) -> None:
    size = f"{len(dataset.records)} records, {corpus.chars} chars, vocab {len(corpus.vocab)}"
    header = [
        "rtrain demo trainer",
        f"run {run_id}" if run_id else "",
        f"backend {model.backend}",
        f"device {model.device}",
        f"dataset {dataset.name}: {size}",
        f"model char-mlp context {config.context} hidden {config.hidden}",
        f"{param_count(start.state.params)} params",
        f"steps {config.steps}",
        f"ranks {world.size} (batch {config.batch_size} each)" if world.distributed else "",
    ]
    say(" | ".join(part for part in header if part))
    if start.resumed:
        say(f"resuming from step {start.step}")
        if start.step > config.steps:
            warn(
                f"the checkpoint is at step {start.step}, past steps={config.steps}; "
                "nothing left to train"
            )


class _Loop:
    """The training loop and where it stands: the step, the last logged loss, the losses
    since, the step last checkpointed."""

    def __init__(
        self,
        config: Config,
        corpus: Corpus,
        world: World,
        start: StartPoint,
        model: Model,
        model_info: dict[str, Any],
    ) -> None:
        self.config, self.corpus, self.world, self.start = config, corpus, world, start
        self.model = model
        self.model_info = model_info
        self.rng, self.step, self.last_loss = start.rng, start.step, start.last_loss
        self.saved_step = self.step if start.resumed else -1
        self.window_losses: list[float] = []

    def checkpoint_now(self) -> None:
        if self.world.is_main:
            state = self.model.export_state()
            save_checkpoint(self.step, state, self.rng, self.last_loss, self.model_info)

    def run(self, stop: StopFlag) -> int:
        """Train until the last step or a stop; the signal number of a stop, else 0."""
        config, world = self.config, self.world
        # Ranks stop together: a signal counts once every rank has heard of it (World.agree),
        # so none is left waiting in a collective. One process alone stops before a step.
        stopping = 0 if world.distributed else (stop.signal_number or 0)
        with open(METRICS_FILE if world.is_main else os.devnull, "a", encoding="utf-8") as metrics:
            while self.step < config.steps and not stopping:
                stopping = self._one_step(stop)
                if self.step % config.log_every == 0 or self.step == config.steps:
                    self._log_window(metrics)
                if self.step % config.checkpoint_every == 0 and self.step < config.steps:
                    self.checkpoint_now()
                    self.saved_step = self.step
                if config.sleep_per_step > 0 and self.step < config.steps:
                    stop.sleep(config.sleep_per_step)
        return stopping

    def _one_step(self, stop: StopFlag) -> int:
        config, world, model = self.config, self.world, self.model
        # Every rank draws the whole batch from the shared generator, then takes its share.
        contexts, targets = self.corpus.draw_batch(
            self.rng, config.context, config.batch_size * world.size
        )
        contexts, targets = world.own_share(contexts, targets)
        try:
            loss = model.train_step(contexts, targets, config.learning_rate)
        except Exception as error:
            if not isinstance(model, TorchModel) or model.device == "cpu" or world.distributed:
                raise
            vocab_size = len(self.corpus.vocab)
            model = step_on_cpu_after_device_failure(
                model, self.start, self.step, error, vocab_size
            )
            self.model = model
            loss = model.train_step(contexts, targets, config.learning_rate)
        loss, stopping = world.agree(loss, stop.signal_number or 0, model.device)
        if not math.isfinite(loss):
            raise UserError(
                f"the loss became {loss} at step {self.step + 1}; try a smaller learning_rate"
            )
        self.step += 1
        self.window_losses.append(loss)
        return stopping

    def _log_window(self, metrics: IO[str]) -> None:
        self.last_loss = sum(self.window_losses) / len(self.window_losses)
        self.window_losses = []
        lr = self.config.learning_rate
        say(f"step {self.step} | loss {self.last_loss:.4f} | lr {lr:g}")
        row = {"step": self.step, "loss": round(self.last_loss, 6), "lr": lr}
        metrics.write(json.dumps(row) + "\n")
        metrics.flush()

    def stopped(self, stopping: int) -> int:
        """Checkpoint what a stop interrupted and say so; the exit status of the stop."""
        step = self.step
        if step != self.saved_step and step > 0:
            if self.window_losses:
                self.last_loss = sum(self.window_losses) / len(self.window_losses)
            self.checkpoint_now()
        outcome = (
            "checkpoint saved, start again in this run directory to resume"
            if step > 0
            else "nothing was trained yet"
        )
        name = signal.Signals(stopping).name
        if self.world.is_main:
            print(
                f"{PROGRAM}: stopped by {name} at step {step}; {outcome}",
                file=sys.stderr,
                flush=True,
            )
        return 128 + stopping


def _save_final(loop: _Loop, dataset: Dataset, run_id: str | None) -> int:
    config, model, vocab = loop.config, loop.model, loop.corpus.vocab
    final = model.export_state()
    output_config = {
        "format": "rtrain-demo-char-mlp",
        "format_version": 1,
        "model_name": config.model_name,
        "architecture": "char-mlp",
        "context": config.context,
        "hidden": config.hidden,
        "vocab_size": len(vocab),
        "vocab": vocab,
        "steps": loop.step,
        "final_loss": loop.last_loss,
        "learning_rate": config.learning_rate,
        "batch_size": config.batch_size,
        "seed": config.seed,
        "backend": model.backend,
        "device": model.device,
        "dataset": dataset.name,
        "dataset_sha256": dataset.sha256,
        "run_id": run_id,
    }
    save_output(final.params, output_config)
    say(f"sample: {sample_text(final.params, vocab, config.context, config.seed, 80)!r}")
    final_loss = "n/a" if loop.last_loss is None else f"{loop.last_loss:.4f}"
    say(f"done: {loop.step} steps, final loss {final_loss}, saved {OUTPUT_DIR}/")
    return 0
