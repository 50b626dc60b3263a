"""The trained model in lora_model/ (named as fine-tuning scripts name theirs), and its text."""

from __future__ import annotations

import json
import os
import random
from typing import TYPE_CHECKING, Any

from .atomic_files import write_atomically
from .dataset import BOUNDARY_ID
from .parameters import next_char_probs

if TYPE_CHECKING:
    from .parameters import Params


OUTPUT_DIR = "lora_model"

OUTPUT_README = """\
# Demo model from rtrain's built-in trainer

This is not a LoRA adapter for a large model. rtrain's demo trainer (demo_trainer.py) trained
a tiny character-level language model on this run's dataset and saved it here under the
name fine-tuning scripts usually use, so fetching `lora_model/` works as for a real run.

- `adapter_config.json`: hyper-parameters, the vocabulary (`vocab`: the character of each
  id; id 0 is "", the edge of a text), steps, final loss.
- `adapter_model.json`: the weights as nested JSON lists of floats:
  `W1` [context * vocab_size][hidden] (row `position * vocab_size + char_id`),
  `b1` [hidden], `W2` [vocab_size][hidden], `b2` [vocab_size].

Next-character probabilities from the ids of the previous `context` characters
c_0..c_{k-1} (oldest first; id 0 stands for the positions before the start of a text):

    h = tanh(b1 + sum_p W1[p * vocab_size + c_p])
    p = softmax(W2 h + b2)

Id 0 as the next character means the text ends there.
"""


def save_output(params: Params, config_info: dict[str, Any]) -> None:
    os.makedirs(OUTPUT_DIR, exist_ok=True)
    write_atomically(
        os.path.join(OUTPUT_DIR, "adapter_model.json"),
        json.dumps(params, separators=(",", ":")).encode(),
    )
    write_atomically(
        os.path.join(OUTPUT_DIR, "adapter_config.json"),
        (json.dumps(config_info, indent=2, ensure_ascii=False) + "\n").encode(),
    )
    write_atomically(os.path.join(OUTPUT_DIR, "README.md"), OUTPUT_README.encode())


def sample_text(params: Params, vocab: list[str], context: int, seed: int, length: int) -> str:
    """Text the model writes from the start of a record until it ends one (or `length`)."""
    rng = random.Random(seed)
    window = [BOUNDARY_ID] * context
    out: list[str] = []
    for _ in range(length):
        probs = next_char_probs(params, window, len(vocab))
        # temperature 0.7 (p ** 1/0.7): closer to the likeliest text than plain sampling
        weights = [p**1.43 for p in probs]
        char_id = rng.choices(range(len(vocab)), weights=weights)[0]
        if char_id == BOUNDARY_ID:
            break
        out.append(vocab[char_id])
        window = window[1:] + [char_id]
    return "".join(out)
