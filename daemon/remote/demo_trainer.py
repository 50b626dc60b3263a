"""rtrain's built-in demo trainer: a tiny character-level language model.

rtrain copies this one file into a run directory on the far host and runs it there when the
user starts a run without a command:

    PYTHON demo_trainer.py --config config.yaml [--dataset FILE.jsonl] [--steps N]

It needs nothing but the host's Python (3.8 or newer, standard library). When `import torch`
works it trains with torch (on cuda, mps or cpu); otherwise, or with `backend: python` in the
config or RTRAIN_DEMO_BACKEND=python in the environment, it trains the same model in pure
Python. Both backends print the same lines and write the same files:

    step 10 | loss 3.2145 | lr 0.01      progress, every `log_every` steps
    checkpoints/step-000050.json         every `checkpoint_every` steps (last two kept)
    metrics.jsonl                        one {"step", "loss", "lr"} object per progress line
    lora_model/                          the trained weights, when all steps are done

Started again in the same directory, it resumes from its newest checkpoint. SIGTERM (or
SIGINT) stops it after the current step with a checkpoint, exit code 128 + signal number.
The reference for users is docs/demo-trainer.md in the rtrain repository.

This file must never import rtrain: on the far host it stands alone.
"""

# This file must run on Python 3.8, where zip() has no strict= argument.
# ruff: noqa: B905

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import signal
import sys
import time
from array import array
from collections.abc import Callable
from operator import mul
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # aliases only for annotations, which stay strings on Python 3.8
    Params = dict[str, Any]  # name -> list of floats, or list of rows of floats
    Model = Any  # PythonModel | TorchModel

# ---------------------------------------------------------------------------------------------
# Errors and messages
# ---------------------------------------------------------------------------------------------

PROGRAM = "demo_trainer"
EXIT_USAGE = 2


class UserError(Exception):
    """A problem the user can fix (config, dataset, run dir): one sentence, exit code 2."""


def warn(message: str) -> None:
    print(f"{PROGRAM}: warning: {message}", file=sys.stderr, flush=True)


def say(message: str) -> None:
    print(message, flush=True)


# ---------------------------------------------------------------------------------------------
# The YAML subset (see docs/demo-trainer.md): no third-party parser exists on a bare host.
# ---------------------------------------------------------------------------------------------


class YamlSubsetError(UserError):
    pass


class YamlDocument:
    """Parsed config: top-level values (a nested mapping is a dict) and each key's line."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        # "key" or "parent.child" -> 1-based line number
        self.lines: dict[str, int] = {}


_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)[ ]*:(?:[ ]+(.*))?$")
_INT = re.compile(r"[-+]?[0-9]+$")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_NULLS = ("null", "Null", "NULL", "~")
_TRUES = ("true", "True", "TRUE")
_FALSES = ("false", "False", "FALSE")
_DOUBLE_QUOTE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\0",
    "b": "\b",
}


def parse_yaml_subset(text: str, source: str = "config.yaml") -> YamlDocument:
    """Parse the documented YAML subset; anything outside it raises YamlSubsetError, which
    names the line."""
    doc = YamlDocument()
    parent: str | None = None  # top-level key whose value is still open for nesting
    nested_indent: int | None = None
    seen_content = False

    for number, raw in enumerate(text.splitlines(), start=1):

        def fail(why: str, number: int = number) -> YamlSubsetError:
            return YamlSubsetError(f"{source} line {number}: {why}")

        indent_text = raw[: len(raw) - len(raw.lstrip(" \t"))]
        if "\t" in indent_text:
            raise fail("tabs are not allowed for indentation; use spaces")
        body = raw.strip()
        if not body or body.startswith("#"):
            continue
        indent = len(indent_text)
        if body == "---" and indent == 0:
            if seen_content:
                raise fail("only one YAML document is supported ('---' after content)")
            continue
        seen_content = True
        if body == "..." or body.startswith("--- "):
            raise fail("document markers other than a leading '---' are not supported")
        if body == "-" or body.startswith("- "):
            raise fail("block lists ('- item') are not supported; write an inline list [a, b]")
        if body[0] in "?{[\"'&*!|>%@`":
            raise fail(f"a line may not start with {body[0]!r}; expected 'key: value'")
        match = _KEY_LINE.match(body)
        if match is None:
            if ":" in body and not re.match(r"[A-Za-z_][A-Za-z0-9_.-]*[ ]*:", body):
                raise fail("keys must be plain names (letters, digits, '_', '-', '.')")
            raise fail("expected 'key: value' (a space must follow the colon)")
        key, rest = match.group(1), (match.group(2) or "")

        if indent == 0:
            if key in doc.values:
                raise fail(f"duplicate key {key!r} (first on line {doc.lines[key]})")
            doc.lines[key] = number
            value_text = _strip_trailing_comment(rest, fail)
            if value_text == "":
                doc.values[key] = None  # becomes a mapping if indented lines follow
                parent, nested_indent = key, None
            else:
                doc.values[key] = _parse_value(value_text, fail)
                parent, nested_indent = None, None
            continue

        if parent is None:
            raise fail(
                "unexpected indentation (only a key with no value on its line may have nested keys)"
            )
        if nested_indent is None:
            nested_indent = indent
            doc.values[parent] = {}
        elif indent > nested_indent:
            raise fail("only one level of nesting is supported")
        elif indent != nested_indent:
            raise fail(
                f"inconsistent indentation ({indent} spaces; the block above uses {nested_indent})"
            )
        mapping = doc.values[parent]
        assert isinstance(mapping, dict)
        full = f"{parent}.{key}"
        if key in mapping:
            raise fail(f"duplicate key {full!r} (first on line {doc.lines[full]})")
        doc.lines[full] = number
        value_text = _strip_trailing_comment(rest, fail)
        mapping[key] = None if value_text == "" else _parse_value(value_text, fail)
    return doc


def _strip_trailing_comment(text: str, fail: Callable[[str], YamlSubsetError]) -> str:
    """Cut a ' # comment' that lies outside quotes; quotes only open at a value's start."""
    text = text.strip()
    if text.startswith("#"):
        return ""
    position = 0
    expecting_value = True  # at the start of the value or of a list item
    while position < len(text):
        char = text[position]
        if expecting_value and char in "\"'":
            position = _end_of_quoted(text, position, fail)
            expecting_value = False
            continue
        if char == "#" and position > 0 and text[position - 1] in " \t":
            return text[:position].rstrip()
        if char in "[,":
            expecting_value = True
        elif char not in " \t":
            expecting_value = False
        position += 1
    return text


def _end_of_quoted(text: str, start: int, fail: Callable[[str], YamlSubsetError]) -> int:
    """Index just past the quoted string opening at `start`."""
    quote = text[start]
    position = start + 1
    while position < len(text):
        char = text[position]
        if quote == '"' and char == "\\":
            position += 2
            continue
        if char == quote:
            if quote == "'" and text[position + 1 : position + 2] == "'":
                position += 2  # '' is an escaped single quote
                continue
            return position + 1
        position += 1
    raise fail(f"unterminated {quote}-quoted string")


def _parse_value(text: str, fail: Callable[[str], YamlSubsetError]) -> Any:
    first = text[0]
    if first == "[":
        if not text.endswith("]"):
            raise fail("an inline list must end with ']' on the same line")
        return _parse_inline_list(text[1:-1], fail)
    if first == "{":
        raise fail("inline mappings ({a: 1}) are not supported; use nested 'key: value' lines")
    if first in "|>":
        raise fail("block scalars ('|' or '>') are not supported; use a quoted string with \\n")
    if first in "&*":
        raise fail("anchors and aliases (&name, *name) are not supported")
    if first == "!":
        raise fail("tags (!tag) are not supported")
    if first in "%@`":
        raise fail(f"a plain value may not start with {first!r}; quote it")
    if first in "\"'":
        end = _end_of_quoted(text, 0, fail)
        if text[end:].strip():
            raise fail(f"unexpected text after the quoted string: {text[end:].strip()!r}")
        return _unquote(text[:end], fail)
    return _parse_plain(text, fail)


def _parse_inline_list(inner: str, fail: Callable[[str], YamlSubsetError]) -> list[Any]:
    items: list[Any] = []
    if not inner.strip():
        return items
    position = 0
    while True:
        while position < len(inner) and inner[position] == " ":
            position += 1
        if position < len(inner) and inner[position] in "\"'":
            end = _end_of_quoted(inner, position, fail)
            item: Any = _unquote(inner[position:end], fail)
            position = end
            while position < len(inner) and inner[position] == " ":
                position += 1
            if position < len(inner) and inner[position] != ",":
                raise fail("expected ',' or ']' after a quoted list item")
        else:
            comma = inner.find(",", position)
            end = len(inner) if comma < 0 else comma
            piece = inner[position:end].strip()
            if not piece:
                raise fail("empty item in an inline list")
            if piece[0] in "[{":
                raise fail("nested lists or mappings inside an inline list are not supported")
            item = _parse_plain(piece, fail)
            position = end
        items.append(item)
        if position >= len(inner):
            return items
        position += 1  # past the comma
        if not inner[position:].strip():
            raise fail("trailing comma in an inline list")


def _unquote(quoted: str, fail: Callable[[str], YamlSubsetError]) -> str:
    body = quoted[1:-1]
    if quoted[0] == "'":
        return body.replace("''", "'")
    out: list[str] = []
    position = 0
    while position < len(body):
        char = body[position]
        if char != "\\":
            out.append(char)
            position += 1
            continue
        escape = body[position + 1 : position + 2]
        if escape in _DOUBLE_QUOTE_ESCAPES:
            out.append(_DOUBLE_QUOTE_ESCAPES[escape])
            position += 2
        elif escape == "u" and re.match(r"[0-9A-Fa-f]{4}$", body[position + 2 : position + 6]):
            out.append(chr(int(body[position + 2 : position + 6], 16)))
            position += 6
        else:
            raise fail(f"unsupported escape '\\{escape}' in a double-quoted string")
    return "".join(out)


def _parse_plain(text: str, fail: Callable[[str], YamlSubsetError]) -> Any:
    if ": " in text or text.endswith(":"):
        raise fail("a value may not contain ': ' unless quoted (one mapping per line)")
    if text in _NULLS:
        return None
    if text in _TRUES:
        return True
    if text in _FALSES:
        return False
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if text in (".inf", "+.inf", ".Inf", "+.Inf"):
        return math.inf
    if text in ("-.inf", "-.Inf"):
        return -math.inf
    if text in (".nan", ".NaN"):
        return math.nan
    return text


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------

DEVICES = ("auto", "cuda", "mps", "cpu")
BACKENDS = ("auto", "torch", "python")


class Config:
    """The trainer's settings with their defaults (docs/demo-trainer.md lists them)."""

    def __init__(self) -> None:
        self.steps = 300
        self.learning_rate = 0.01
        self.batch_size = 32
        self.context = 3
        self.hidden = 32
        self.seed = 1234
        self.checkpoint_every = 50
        self.log_every = 10
        self.device = "auto"
        self.backend = "auto"
        self.sleep_per_step = 0.0
        self.model_name = "rtrain-demo-char-mlp"


def _want_int(value: Any, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number from {low} to {high}"
    if not low <= value <= high:
        return f"must be from {low} to {high}, not {value}"
    return None


def _want_number(value: Any, low: float, low_inclusive: bool, high: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return "must be a number"
    too_low = value < low or (value == low and not low_inclusive)
    if too_low or value > high:
        bound = ">=" if low_inclusive else ">"
        return f"must be {bound} {low:g} and <= {high:g}, not {value:g}"
    return None


def _device_problem(value: Any) -> str | None:
    if isinstance(value, str) and (value in DEVICES or re.match(r"cuda:[0-9]+$", value)):
        return None
    return "must be one of auto, cuda, cuda:N, mps, cpu"


_CONFIG_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "steps": lambda v: _want_int(v, 1, 10_000_000),
    "learning_rate": lambda v: _want_number(v, 0.0, False, 10.0),
    "batch_size": lambda v: _want_int(v, 1, 65_536),
    "context": lambda v: _want_int(v, 1, 64),
    "hidden": lambda v: _want_int(v, 1, 4096),
    "seed": lambda v: _want_int(v, 0, 2**63 - 1),
    "checkpoint_every": lambda v: _want_int(v, 1, 10_000_000),
    "log_every": lambda v: _want_int(v, 1, 10_000_000),
    "device": _device_problem,
    "backend": lambda v: None if v in BACKENDS else "must be one of auto, torch, python",
    "sleep_per_step": lambda v: _want_number(v, 0.0, True, 3600.0),
    "model_name": lambda v: None if isinstance(v, (str, int, float)) else "must be a string",
}


def config_from_document(doc: YamlDocument, source: str) -> Config:
    """Apply known keys (validated, errors name the line); unknown keys only warn."""
    config = Config()
    for key, value in doc.values.items():
        line = doc.lines[key]
        check = _CONFIG_CHECKS.get(key)
        if check is None:
            warn(f"{source} line {line}: unknown key {key!r} (ignored by the demo trainer)")
            continue
        if value is None:
            continue  # `key:` or `key: null` keeps the default
        problem = check(value)
        if problem is not None:
            raise UserError(f"{source} line {line}: {key} {problem} (got {value!r})")
        if key == "learning_rate" or key == "sleep_per_step":
            value = float(value)
        elif key == "model_name":
            value = str(value)
        setattr(config, key, value)
    return config


def load_config(path: str | None) -> Config:
    if path is None:
        return Config()
    try:
        with open(path, encoding="utf-8-sig") as handle:  # -sig: tolerate a byte-order mark
            text = handle.read()
    except FileNotFoundError:
        raise UserError(f"config file {path!r} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read config file {path!r}: {error}") from None
    name = os.path.basename(path)
    return config_from_document(parse_yaml_subset(text, name), name)


# ---------------------------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# The model: x = the `context` previous characters (one-hot each), h = tanh(W1 x + b1),
# p(next char) = softmax(W2 h + b2). W1 is stored as one row per (position, character), so
# W1 x is a sum of `context` rows. Plain lists of floats: both backends read and write them.
# ---------------------------------------------------------------------------------------------

PARAM_NAMES = ("W1", "b1", "W2", "b2")
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-8


def init_params(rng: random.Random, vocab_size: int, context: int, hidden: int) -> Params:
    w1_scale = 1.0 / math.sqrt(context)
    w2_scale = 0.5 / math.sqrt(hidden)  # small outputs: the first loss is close to ln(vocab)
    return {
        "W1": [
            [rng.gauss(0.0, w1_scale) for _ in range(hidden)] for _ in range(context * vocab_size)
        ],
        "b1": [0.0] * hidden,
        "W2": [[rng.gauss(0.0, w2_scale) for _ in range(hidden)] for _ in range(vocab_size)],
        "b2": [0.0] * vocab_size,
    }


def zeros_like(params: Params) -> Params:
    out: Params = {}
    for name, value in params.items():
        if value and isinstance(value[0], list):
            out[name] = [[0.0] * len(row) for row in value]
        else:
            out[name] = [0.0] * len(value)
    return out


def param_count(params: Params) -> int:
    total = 0
    for value in params.values():
        total += (
            sum(len(row) for row in value) if value and isinstance(value[0], list) else len(value)
        )
    return total


def next_char_probs(params: Params, context_ids: list[int], vocab_size: int) -> list[float]:
    """Forward pass for one context (used for sampling; training has its own loops)."""
    pre = list(params["b1"])
    for position, char_id in enumerate(context_ids):
        pre = [a + w for a, w in zip(pre, params["W1"][position * vocab_size + char_id])]
    hidden = [math.tanh(x) for x in pre]
    logits = [b + sum(map(mul, row, hidden)) for b, row in zip(params["b2"], params["W2"])]
    top = max(logits)
    exps = [math.exp(z - top) for z in logits]
    total = sum(exps)
    return [e / total for e in exps]


class TrainState:
    """Weights and Adam moments as plain lists (a checkpoint adds the step and the RNG)."""

    def __init__(self, params: Params, adam_m: Params, adam_v: Params, adam_t: int) -> None:
        self.params = params
        self.adam_m = adam_m
        self.adam_v = adam_v
        self.adam_t = adam_t


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


class TorchModel:
    """The same model and update with torch tensors on a device."""

    backend = "torch"

    def __init__(self, torch: Any, state: TrainState, vocab_size: int, device: str) -> None:
        self.torch = torch
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


# ---------------------------------------------------------------------------------------------
# Backend and device choice
# ---------------------------------------------------------------------------------------------


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
        if _device_problem(from_env) is not None:
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
            warn(f"device {device!r} failed ({_one_line(error)}); falling back to cpu")
    return TorchModel(torch, state, vocab_size, "cpu")


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


# ---------------------------------------------------------------------------------------------
# Checkpoints: checkpoints/step-NNNNNN.json, written to a temp name and renamed into place,
# so a file under a final name is always complete. The newest two are kept.
# ---------------------------------------------------------------------------------------------

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_NAME = re.compile(r"step-([0-9]+)\.json$")
CHECKPOINT_FORMAT = "rtrain-demo-checkpoint"
CHECKPOINTS_KEPT = 2
METRICS_FILE = "metrics.jsonl"
OUTPUT_DIR = "lora_model"


def write_atomically(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    temp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    try:  # make the rename itself durable; not every filesystem allows fsync on a directory
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def remove_stale_temp_files(directory: str, final_name: str = "") -> None:
    """Temp files left by a killed writer (SIGKILL, OOM, power loss) are never resumed from.
    Only ours go: `.{final_name}.tmp-PID` (any final name in our own folders)."""
    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name.startswith(f".{final_name}") and ".tmp-" in name:
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass


def checkpoint_paths() -> list[tuple[int, str]]:
    """(step, path) of every checkpoint under a final name, newest first."""
    if not os.path.isdir(CHECKPOINT_DIR):
        return []
    found = []
    for name in os.listdir(CHECKPOINT_DIR):
        match = CHECKPOINT_NAME.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(CHECKPOINT_DIR, name)))
    return sorted(found, reverse=True)


def save_checkpoint(
    step: int,
    state: TrainState,
    rng: random.Random,
    last_loss: float | None,
    model_info: dict[str, Any],
) -> None:
    os.makedirs(CHECKPOINT_DIR, exist_ok=True)
    version, internal, gauss_next = rng.getstate()
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": 1,
        "step": step,
        "last_loss": last_loss,
        "model": model_info,
        "params": state.params,
        "adam": {"t": state.adam_t, "m": state.adam_m, "v": state.adam_v},
        "rng_state": [version, list(internal), gauss_next],
    }
    path = os.path.join(CHECKPOINT_DIR, f"step-{step:06d}.json")
    write_atomically(path, json.dumps(payload, separators=(",", ":")).encode())
    for _, old in checkpoint_paths()[CHECKPOINTS_KEPT:]:
        try:
            os.remove(old)
        except OSError:
            pass


def load_latest_checkpoint() -> dict[str, Any] | None:
    """The newest readable checkpoint; an unreadable one is skipped with a warning."""
    for step, path in checkpoint_paths():
        try:
            with open(path, encoding="utf-8") as handle:
                payload = json.load(handle)
            if (
                not isinstance(payload, dict)
                or payload.get("format") != CHECKPOINT_FORMAT
                or payload.get("step") != step
            ):
                raise ValueError("not a demo-trainer checkpoint")
            payload["path"] = path
            return dict(payload)
        except (OSError, ValueError) as error:
            warn(f"skipping unreadable checkpoint {path} ({_one_line(error)})")
    return None


def restore_rng(saved: list[Any]) -> random.Random:
    rng = random.Random()
    rng.setstate((saved[0], tuple(saved[1]), saved[2]))
    return rng


def trim_metrics(up_to_step: int | None) -> None:
    """Keep metrics.jsonl in step with the checkpoint we start from (none: start empty)."""
    if not os.path.exists(METRICS_FILE):
        return
    kept: list[str] = []
    if up_to_step is not None:
        with open(METRICS_FILE, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                    if isinstance(row, dict) and int(row["step"]) <= up_to_step:
                        kept.append(json.dumps(row) + "\n")
                except (ValueError, KeyError, TypeError):
                    continue  # e.g. a line cut short by a kill
    write_atomically(METRICS_FILE, "".join(kept).encode())


# ---------------------------------------------------------------------------------------------
# Output: lora_model/ (the name matches what fine-tuning scripts usually produce)
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Training loop
# ---------------------------------------------------------------------------------------------


class StopFlag:
    """Set by SIGTERM/SIGINT; the loop stops between steps, never inside a checkpoint write."""

    def __init__(self) -> None:
        self.signal_number: int | None = None

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.signal_number = signum

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.signal_number is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="demo_trainer.py",
        description="rtrain's demo trainer: a tiny character-level language model.",
    )
    parser.add_argument("--config", help="YAML config (the subset in docs/demo-trainer.md)")
    parser.add_argument(
        "--dataset",
        help='JSONL dataset: {"text": ...} or {"prompt": ..., "completion": ...} per line',
    )
    parser.add_argument("--steps", type=int, help="total steps; overrides the config")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    stop = StopFlag()
    stop.install()
    args = parse_arguments(argv)
    try:
        return train(args, stop)
    except UserError as error:
        print(f"{PROGRAM}: error: {error}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except OSError as error:  # e.g. a full disk while writing a checkpoint
        print(f"{PROGRAM}: error: {error}", file=sys.stderr, flush=True)
        return 1


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
                what = "the dataset's characters" if key == "vocab" else key
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


def pick_model(config: Config, state: TrainState, vocab_size: int) -> Model:
    backend, torch = choose_backend(config)
    wanted_device, origin = requested_device(config)
    if backend == "python":
        if wanted_device not in ("auto", "cpu"):
            warn(
                f"device {wanted_device!r} (from {origin}) ignored: the pure-Python backend "
                "runs on cpu"
            )
        return build_model(backend, None, state, vocab_size, config, "cpu")
    device = resolve_torch_device(torch, wanted_device, origin)
    return build_model(backend, torch, state, vocab_size, config, device)


def step_on_cpu_after_device_failure(
    model: Model, start: StartPoint, step: int, error: Exception, vocab_size: int
) -> Model:
    """A torch model on cpu with the state of `model`, whose device failed in a step."""
    warn(
        f"device {model.device!r} failed during training ({_one_line(error)}); falling back to cpu"
    )
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
    config = load_config(args.config)
    if args.steps is not None:
        if args.steps < 1:
            raise UserError(f"--steps must be at least 1, not {args.steps}")
        config.steps = args.steps
    dataset = load_dataset(args.dataset)
    corpus = Corpus(dataset.records)
    vocab = corpus.vocab
    model_info = {
        "architecture": "char-mlp",
        "context": config.context,
        "hidden": config.hidden,
        "vocab": vocab,
        "dataset_sha256": dataset.sha256,
    }

    remove_stale_temp_files(CHECKPOINT_DIR)
    remove_stale_temp_files(OUTPUT_DIR)
    remove_stale_temp_files(".", METRICS_FILE)
    start = StartPoint(config, dataset, model_info)
    trim_metrics(start.step if start.resumed else None)
    model = pick_model(config, start.state, len(vocab))

    run_id = os.environ.get("RTRAIN_RUN_ID")
    size = f"{len(dataset.records)} records, {corpus.chars} chars, vocab {len(vocab)}"
    header = [
        "rtrain demo trainer",
        f"run {run_id}" if run_id else "",
        f"backend {model.backend}",
        f"device {model.device}",
        f"dataset {dataset.name}: {size}",
        f"model char-mlp context {config.context} hidden {config.hidden}",
        f"{param_count(start.state.params)} params",
        f"steps {config.steps}",
    ]
    say(" | ".join(part for part in header if part))
    if start.resumed:
        say(f"resuming from step {start.step}")
        if start.step > config.steps:
            warn(
                f"the checkpoint is at step {start.step}, past steps={config.steps}; "
                "nothing left to train"
            )

    rng, step, last_loss = start.rng, start.step, start.last_loss
    saved_step = step if start.resumed else -1
    window_losses: list[float] = []

    def checkpoint_now() -> None:
        save_checkpoint(step, model.export_state(), rng, last_loss, model_info)

    with open(METRICS_FILE, "a", encoding="utf-8") as metrics:
        while step < config.steps and stop.signal_number is None:
            contexts, targets = corpus.draw_batch(rng, config.context, config.batch_size)
            try:
                loss = model.train_step(contexts, targets, config.learning_rate)
            except Exception as error:
                if model.backend != "torch" or model.device == "cpu":
                    raise
                model = step_on_cpu_after_device_failure(model, start, step, error, len(vocab))
                loss = model.train_step(contexts, targets, config.learning_rate)
            if not math.isfinite(loss):
                raise UserError(
                    f"the loss became {loss} at step {step + 1}; try a smaller learning_rate"
                )
            step += 1
            window_losses.append(loss)
            if step % config.log_every == 0 or step == config.steps:
                last_loss = sum(window_losses) / len(window_losses)
                window_losses = []
                say(f"step {step} | loss {last_loss:.4f} | lr {config.learning_rate:g}")
                row = {"step": step, "loss": round(last_loss, 6), "lr": config.learning_rate}
                metrics.write(json.dumps(row) + "\n")
                metrics.flush()
            if step % config.checkpoint_every == 0 and step < config.steps:
                checkpoint_now()
                saved_step = step
            if config.sleep_per_step > 0 and step < config.steps:
                stop.sleep(config.sleep_per_step)

    if stop.signal_number is not None:
        if step != saved_step and step > 0:
            if window_losses:
                last_loss = sum(window_losses) / len(window_losses)
            checkpoint_now()
        outcome = (
            "checkpoint saved, start again in this run directory to resume"
            if step > 0
            else "nothing was trained yet"
        )
        name = signal.Signals(stop.signal_number).name
        print(
            f"{PROGRAM}: stopped by {name} at step {step}; {outcome}", file=sys.stderr, flush=True
        )
        return 128 + stop.signal_number

    if step != saved_step:
        checkpoint_now()
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
        "steps": step,
        "final_loss": last_loss,
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
    final_loss = "n/a" if last_loss is None else f"{last_loss:.4f}"
    say(f"done: {step} steps, final loss {final_loss}, saved {OUTPUT_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
