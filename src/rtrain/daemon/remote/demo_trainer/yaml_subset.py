"""The YAML subset config.yaml is read with (docs/demo-trainer.md lists it): no third-party
parser exists on a bare host."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .messages import UserError


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
    reader = _Reader(source)
    for number, raw in enumerate(text.splitlines(), start=1):
        reader.line(number, raw)
    return reader.doc


class _Reader:
    """The document read so far, and the top-level key whose value is still open for
    nesting (a key with no value on its line)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.doc = YamlDocument()
        self.parent: str | None = None
        self.nested_indent: int | None = None
        self.seen_content = False

    def line(self, number: int, raw: str) -> None:
        def fail(why: str, number: int = number) -> YamlSubsetError:
            return YamlSubsetError(f"{self.source} line {number}: {why}")

        indent_text = raw[: len(raw) - len(raw.lstrip(" \t"))]
        if "\t" in indent_text:
            raise fail("tabs are not allowed for indentation; use spaces")
        body = raw.strip()
        if not body or body.startswith("#"):
            return
        indent = len(indent_text)
        if body == "---" and indent == 0:
            if self.seen_content:
                raise fail("only one YAML document is supported ('---' after content)")
            return
        self.seen_content = True
        key, rest = _key_and_rest(body, fail)
        if indent == 0:
            self._top_level(key, rest, number, fail)
        else:
            self._nested(key, rest, indent, number, fail)

    def _top_level(
        self, key: str, rest: str, number: int, fail: Callable[[str], YamlSubsetError]
    ) -> None:
        doc = self.doc
        if key in doc.values:
            raise fail(f"duplicate key {key!r} (first on line {doc.lines[key]})")
        doc.lines[key] = number
        value_text = _strip_trailing_comment(rest, fail)
        if value_text == "":
            doc.values[key] = None  # becomes a mapping if indented lines follow
            self.parent, self.nested_indent = key, None
        else:
            doc.values[key] = _parse_value(value_text, fail)
            self.parent, self.nested_indent = None, None

    def _nested(
        self,
        key: str,
        rest: str,
        indent: int,
        number: int,
        fail: Callable[[str], YamlSubsetError],
    ) -> None:
        parent, doc = self.parent, self.doc
        if parent is None:
            raise fail(
                "unexpected indentation (only a key with no value on its line may have nested keys)"
            )
        if self.nested_indent is None:
            self.nested_indent = indent
            doc.values[parent] = {}
        elif indent > self.nested_indent:
            raise fail("only one level of nesting is supported")
        elif indent != self.nested_indent:
            raise fail(
                f"inconsistent indentation ({indent} spaces; the block above uses "
                f"{self.nested_indent})"
            )
        mapping = doc.values[parent]
        assert isinstance(mapping, dict)
        full = f"{parent}.{key}"
        if key in mapping:
            raise fail(f"duplicate key {full!r} (first on line {doc.lines[full]})")
        doc.lines[full] = number
        value_text = _strip_trailing_comment(rest, fail)
        mapping[key] = None if value_text == "" else _parse_value(value_text, fail)


def _key_and_rest(body: str, fail: Callable[[str], YamlSubsetError]) -> tuple[str, str]:
    """A content line's key and the text after its colon, or the reason it is not one."""
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
    return match.group(1), (match.group(2) or "")


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
