"""How long a run's command says it trains: `--max_epochs 4`, `--trainer.max_epochs=4`
(LightningCLI), `max_epochs=4` (Hydra), `--max_steps 30`. Lightning's tqdm bar counts the
batches of one epoch and never says how many epochs there are; with these, its progress is
over the whole fit (docs/metrics.md, Lightning)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"^(?:--)?(?:[\w-]+\.)*max[_-](epochs|steps)(?:=(-?\d{1,9}))?$")


def planned_length(command: Sequence[str] | None) -> tuple[int | None, int | None]:
    """(epochs, steps) the command plans; None where it says nothing, or a value Lightning
    reads as unlimited (-1, 0)."""
    found: dict[str, int | None] = {"epochs": None, "steps": None}
    words = list(command or [])
    for index, word in enumerate(words):
        match = _WORD.match(word)
        if match is None:
            continue
        value = match[2]
        if value is None and word.startswith("--") and index + 1 < len(words):
            value = words[index + 1] if re.fullmatch(r"-?\d{1,9}", words[index + 1]) else None
        if value is not None:
            number = int(value)
            found[match[1]] = number if number > 0 else None
    return found["epochs"], found["steps"]
