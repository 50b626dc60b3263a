"""A real transformers Trainer on a tiny GPT-2, for the suite: two layers and a character
vocabulary built from a config in code (nothing from the hub), trained on text.txt on CPU.

    python train.py [--max_steps=20] [--save_steps=10] [--resume_from_checkpoint=True]
                    [--eval_steps=N] [--disable_tqdm] [--fail_at=STEP]

`--resume_from_checkpoint` is passed on to `trainer.train()` (`True`: the last
`out/checkpoint-N`, as docs/cli.md's restart recipe says). What the trainer itself recorded
lands beside the log, for the tests to compare with what rtrain read from it:
`trainer_log.json` (`trainer.state.log_history`, the whole history also after a resume) and
`begin_steps.json` (the global step each attempt's training began at). `--eval_steps`
evaluates every N steps on the same windows, `--disable_tqdm` prints the Trainer's dicts with
no bar, `--fail_at` raises ValueError at the end of that step (as a user's bug would).
"""

import argparse
import json
import os

# No hub access at all: the model is built from a config, and nothing may be looked up.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

BLOCK = 16


def resume_value(text: str) -> bool | str:
    return True if text == "True" else text


class Windows(torch.utils.data.Dataset):
    """Every BLOCK characters of the text, as token ids (GPT-2 shifts the labels itself)."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = torch.tensor(ids)

    def __len__(self) -> int:
        return len(self.ids) - BLOCK

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        window = self.ids[i : i + BLOCK]
        return {"input_ids": window, "labels": window}


class BeginSteps(TrainerCallback):
    """Appends the step training begins at (0, or the resumed checkpoint's) to a file."""

    def on_train_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        steps = []
        if os.path.exists("begin_steps.json"):
            with open("begin_steps.json") as f:
                steps = json.load(f)
        with open("begin_steps.json", "w") as f:
            json.dump([*steps, state.global_step], f)


class FailAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        if state.global_step == self.step:
            raise ValueError(f"the test trainer fails at step {self.step}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_steps", type=int, default=20)
    parser.add_argument("--save_steps", type=int, default=10)
    parser.add_argument("--resume_from_checkpoint", type=resume_value, default=None)
    parser.add_argument("--eval_steps", type=int, default=0)
    parser.add_argument("--disable_tqdm", action="store_true")
    parser.add_argument("--fail_at", type=int, default=0)
    args = parser.parse_args()

    with open("text.txt") as f:
        text = f.read()
    vocab = sorted(set(text))
    ids = [vocab.index(c) for c in text]

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=BLOCK,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=None,  # GPT-2's own ids lie outside a character vocabulary
        eos_token_id=None,
    )
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir="out",
        max_steps=args.max_steps,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        logging_steps=1,
        save_steps=args.save_steps,
        report_to="none",
        use_cpu=True,
        seed=0,
        dataloader_num_workers=0,
        disable_tqdm=args.disable_tqdm,
        eval_strategy="steps" if args.eval_steps else "no",
        eval_steps=args.eval_steps or None,
    )
    callbacks: list[TrainerCallback] = [BeginSteps()]
    if args.fail_at:
        callbacks.append(FailAt(args.fail_at))
    data = Windows(ids)
    trainer = Trainer(
        model=model,
        args=training,
        train_dataset=data,
        eval_dataset=data if args.eval_steps else None,
        callbacks=callbacks,
    )
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    with open("trainer_log.json", "w") as f:
        json.dump(trainer.state.log_history, f)


if __name__ == "__main__":
    main()
