"""A real lightning.Trainer on a tiny character model, for the suite: an embedding and a
linear layer over a few characters of context, trained on text.txt on CPU.

    python train.py [--max_steps=20] [--every=5] [--ckpt_path=last] [--max_epochs=N]
                    [--fail_at=STEP]

`--ckpt_path` is passed on to `trainer.fit()` (`last`: `checkpoints/last.ckpt`, kept by
`ModelCheckpoint(save_last=True)`, as docs/cli.md's restart recipe says). What the trainer
itself logged lands beside the log, for the tests to compare with what rtrain read from it:
`losses.json` (each step's logged `train_loss`; the callback keeps its list in the
checkpoint, so a resumed run writes the whole history) and `begin_steps.json` (the global
step each attempt's training began at). `--fail_at` raises ValueError in that step's
training_step (as a user's bug would).
"""

import argparse
import json
import os

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

CONTEXT = 4
BATCH = 8


class CharModel(L.LightningModule):
    def __init__(self, vocab: int, fail_at: int = 0) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.embed = nn.Embedding(vocab, 16)
        self.head = nn.Linear(16 * CONTEXT, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x).flatten(1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        if self.fail_at and self.global_step == self.fail_at:
            raise ValueError(f"the test trainer fails at step {self.fail_at}")
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


class LossRecord(L.Callback):
    """Each step's logged loss, kept in the checkpoint so that a resume goes on with it."""

    def __init__(self) -> None:
        self.losses: list[dict[str, float]] = []

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        steps = []
        if os.path.exists("begin_steps.json"):
            with open("begin_steps.json") as f:
                steps = json.load(f)
        with open("begin_steps.json", "w") as f:
            json.dump([*steps, trainer.global_step], f)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):  # type: ignore[no-untyped-def]
        loss = float(trainer.callback_metrics["train_loss"])
        self.losses.append({"step": trainer.global_step, "loss": loss})

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        with open("losses.json", "w") as f:
            json.dump(self.losses, f)

    def state_dict(self) -> dict[str, list[dict[str, float]]]:
        return {"losses": self.losses}

    def load_state_dict(self, state_dict: dict[str, list[dict[str, float]]]) -> None:
        self.losses = list(state_dict["losses"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--ckpt_path", default=None)
    parser.add_argument("--max_epochs", type=int, default=None)
    parser.add_argument("--fail_at", type=int, default=0)
    args = parser.parse_args()

    with open("text.txt") as f:
        text = f.read()
    vocab = sorted(set(text))
    ids = torch.tensor([vocab.index(c) for c in text])
    # 80 windows: 10 batches an epoch, so a checkpoint every 5 steps may fall mid-epoch.
    windows = torch.stack([ids[i : i + CONTEXT] for i in range(80)])
    targets = ids[CONTEXT : CONTEXT + 80]

    L.seed_everything(0)
    model = CharModel(len(vocab), args.fail_at)
    data = DataLoader(TensorDataset(windows, targets), batch_size=BATCH, shuffle=True)
    checkpoints = L.pytorch.callbacks.ModelCheckpoint(
        dirpath="checkpoints", every_n_train_steps=args.every, save_top_k=-1, save_last=True
    )
    trainer = L.Trainer(
        max_steps=args.max_steps,
        max_epochs=args.max_epochs,
        accelerator="cpu",
        devices=1,
        logger=False,
        # tqdm's bar, not the rich one Lightning picks when rich is installed (transformers
        # brings it): into a log file, rich's bar prints only its last state, tqdm's each step.
        callbacks=[checkpoints, LossRecord(), L.pytorch.callbacks.TQDMProgressBar()],
    )
    trainer.fit(model, data, ckpt_path=args.ckpt_path)


if __name__ == "__main__":
    main()
