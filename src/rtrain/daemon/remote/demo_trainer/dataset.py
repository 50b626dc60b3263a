"""The dataset: JSONL records read and checked line by line, then held as character ids."""

from __future__ import annotations

import hashlib
import json
import os
import random
from array import array
from typing import Any

from .messages import UserError

# Used when no --dataset is given, so a bare demo run still learns something.
BUILTIN_RECORDS = [
    "the cat sat on the warm mat and looked at the rain.",
    "a small boat sails across the quiet lake at dawn.",
    "the baker wakes early to bake bread for the town.",
    "two birds sing in the old oak tree by the road.",
    "the train leaves the station at nine every morning.",
    "she reads a book under the lamp while the tea cools.",
    "the river runs past the mill and into the sea.",
    "he plants beans in the garden when the soil is warm.",
]


class Dataset:
    def __init__(self, name: str, records: list[str], sha256: str) -> None:
        self.name = name
        self.records = records
        self.sha256 = sha256


BOUNDARY_ID = 0  # vocab[0] is "": the edge of a record (context before it, target after it)


class Corpus:
    """A dataset as character ids: each record's ids followed by BOUNDARY_ID."""

    def __init__(self, records: list[str]) -> None:
        self.vocab = [""] + sorted(set("".join(records)))
        char_ids = {char: index for index, char in enumerate(self.vocab)}
        # arrays, not lists: 4 bytes per character instead of a pointer to an int object
        self.ids = array("i")
        self.record_start = array("i")  # per position: where its record begins
        for record in records:
            start = len(self.ids)
            self.ids.extend(char_ids[char] for char in record)
            self.ids.append(BOUNDARY_ID)
            self.record_start.extend([start] * (len(record) + 1))
        self.chars = len(self.ids) - len(records)

    def draw_batch(
        self, rng: random.Random, context: int, batch_size: int
    ) -> tuple[list[list[int]], list[int]]:
        """Random (previous `context` ids, next id) pairs; a context never reaches into the
        record before, it is padded with BOUNDARY_ID as at sampling time."""
        contexts: list[list[int]] = []
        targets: list[int] = []
        for _ in range(batch_size):
            position = rng.randrange(len(self.ids))
            begin = max(self.record_start[position], position - context)
            pad = context - (position - begin)
            contexts.append([BOUNDARY_ID] * pad + self.ids[begin:position].tolist())
            targets.append(self.ids[position])
        return contexts, targets


def record_text(obj: Any, where: str) -> str:
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "text" in obj:
        text = obj["text"]
        if not isinstance(text, str):
            raise UserError(f'{where}: "text" must be a string')
        return text
    if "prompt" in obj and "completion" in obj:
        prompt, completion = obj["prompt"], obj["completion"]
        if not isinstance(prompt, str) or not isinstance(completion, str):
            raise UserError(f'{where}: "prompt" and "completion" must be strings')
        return prompt + completion
    raise UserError(f'{where}: needs a "text" field or "prompt" and "completion" fields')


def load_dataset(path: str | None) -> Dataset:
    if path is None:
        digest = hashlib.sha256("\n".join(BUILTIN_RECORDS).encode()).hexdigest()
        return Dataset("(built-in sample)", list(BUILTIN_RECORDS), digest)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark some editors write
            raw = raw[3:]
    except FileNotFoundError:
        raise UserError(f"dataset file {path!r} not found") from None
    except OSError as error:
        raise UserError(f"cannot read dataset {path!r}: {error}") from None
    name = os.path.basename(path)
    records: list[str] = []
    for number, line_bytes in enumerate(raw.split(b"\n"), start=1):
        where = f"{name} line {number}"
        try:
            line = line_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{where}: not valid UTF-8") from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as error:
            raise UserError(f"{where}: not valid JSON ({error})") from None
        text = record_text(obj, where)
        if text:
            records.append(text)
    if not records:
        raise UserError(f"dataset {name!r} has no records with text")
    return Dataset(name, records, hashlib.sha256(raw).hexdigest())
