"""Curves drawn into a PNG with the standard library alone (zlib, struct): axes, one line
per run in its own colour, and a legend in a small built-in pixel font. No plotting package
to install for `rtrain compare --png` (docs/compare.md)."""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence

WIDTH, HEIGHT = 960, 540
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 70, 220, 30, 40
BACKGROUND = (255, 255, 255)
INK = (60, 60, 60)
GRID = (225, 225, 225)
# Colours that stay apart from each other (Tableau 10).
PALETTE = [
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
]  # fmt: skip
# A 3x5 pixel font: each glyph five rows of three bits, the top row first.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", ".": "000000000000010", "-": "000000111000000",
    "_": "000000000000111", "=": "000111000111000", "+": "000010111010000",
    "e": "000111111100111", ":": "000010000010000", "/": "001001010100100",
    " ": "000000000000000",
}  # fmt: skip
_LETTERS = {
    "a": "000011101101011", "b": "100110101101110", "c": "000011100100011",
    "d": "001011101101011", "f": "011100110100100", "g": "011101011001110",
    "h": "100110101101101", "i": "010000010010010", "j": "001000001001110",
    "k": "100101110101101", "l": "110010010010111", "m": "000111111101101",
    "n": "000110101101101", "o": "000010101101010", "p": "000110101110100",
    "q": "000011101011001", "r": "000011100100100", "s": "000011110011110",
    "t": "010111010010011", "u": "000101101101011", "v": "000101101101010",
    "w": "000101101111111", "x": "000101010101101", "y": "000101011001110",
    "z": "000111001100111",
}  # fmt: skip
_FONT |= _LETTERS
SCALE = 2


class Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(BACKGROUND) * (width * height))

    def dot(self, x: int, y: int, colour: tuple[int, int, int]) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            at = (y * self.width + x) * 3
            self.pixels[at : at + 3] = bytes(colour)

    def line(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        """Bresenham's line, two pixels thick."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        while True:
            self.dot(x0, y0, colour)
            self.dot(x0, y0 + 1, colour)
            if x0 == x1 and y0 == y1:
                return
            twice = 2 * error
            if twice >= dy:
                error += dy
                x0 += sx
            if twice <= dx:
                error += dx
                y0 += sy

    def text(self, x: int, y: int, words: str, colour: tuple[int, int, int]) -> None:
        for char in words.lower():
            glyph = _FONT.get(char, _FONT[" "])
            for index, bit in enumerate(glyph):
                if bit == "1":
                    row, col = divmod(index, 3)
                    for ox in range(SCALE):
                        for oy in range(SCALE):
                            self.dot(x + col * SCALE + ox, y + row * SCALE + oy, colour)
            x += 4 * SCALE

    def png(self) -> bytes:
        raw = b"".join(
            b"\x00" + bytes(self.pixels[y * self.width * 3 : (y + 1) * self.width * 3])
            for y in range(self.height)
        )

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 6))
            + chunk(b"IEND", b"")
        )


def curves_png(
    title: str, curves: Sequence[tuple[str, Sequence[float], Sequence[float | None]]]
) -> bytes:
    """A PNG of `curves` (label, steps, values), one colour each, with a legend."""
    canvas = Canvas(WIDTH, HEIGHT)
    points = [
        (s, v)
        for _, steps, values in curves
        for s, v in zip(steps, values, strict=False)
        if v is not None and math.isfinite(v)
    ]
    left, top = MARGIN_LEFT, MARGIN_TOP
    right, bottom = WIDTH - MARGIN_RIGHT, HEIGHT - MARGIN_BOTTOM
    canvas.text(left, 8, title, INK)
    if points:
        x_low, x_high = min(p[0] for p in points), max(p[0] for p in points)
        y_low, y_high = min(p[1] for p in points), max(p[1] for p in points)
        x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0

        def at(step: float, value: float) -> tuple[int, int]:
            x = left + (step - x_low) / x_span * (right - left)
            y = bottom - (value - y_low) / y_span * (bottom - top)
            return round(x), round(y)

        for tick in range(5):
            level = y_low + y_span * tick / 4
            _, y = at(x_low, level)
            canvas.line(left, y, right, y, GRID)
            canvas.text(4, y - 5, f"{level:.3g}", INK)
        canvas.text(left, bottom + 12, f"{x_low:g}", INK)
        canvas.text(right - 40, bottom + 12, f"{x_high:g}", INK)
        for index, (_, steps, values) in enumerate(curves):
            colour = PALETTE[index % len(PALETTE)]
            last: tuple[int, int] | None = None
            for step, value in zip(steps, values, strict=False):
                if value is None or not math.isfinite(value):
                    last = None  # a gap where the log said nan
                    continue
                here = at(step, value)
                if last is not None:
                    canvas.line(*last, *here, colour)
                else:
                    canvas.dot(*here, colour)
                last = here
    canvas.line(left, top, left, bottom, INK)
    canvas.line(left, bottom, right, bottom, INK)
    for index, (label, _, _) in enumerate(curves[:40]):
        colour = PALETTE[index % len(PALETTE)]
        y = top + index * 12
        canvas.line(right + 12, y + 4, right + 28, y + 4, colour)
        canvas.text(right + 34, y, label[:22], INK)
    return canvas.png()
