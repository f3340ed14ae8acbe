"""The parsers of URL fields: each takes the query's text and returns the value, raises
ValueError for a value it cannot read, or Capped for a number outside its range (held at
the nearest end). Each carries .range, the words a note uses for what it accepts, and the
bounds a widget takes from it: .lo and .hi, .options or .max_chars.
"""

from __future__ import annotations

import math

from ..core.kinds.treeshape import PATHS_NODES_MAX, PATHS_TEXT_MAX, parse_paths
from .urlcodec import decode_blob, url_blob


class Capped(ValueError):
    """A number outside its range: it is held at the nearest end, with a note."""

    def __init__(self, value: float) -> None:
        super().__init__(value)
        self.value = value


def int_in(lo: int, hi: int):
    def parse(s: str) -> int:
        v = float(s)  # accepts "4", "4.0", "1e3"
        if not math.isfinite(v) or v != int(v):
            raise ValueError
        if not lo <= v <= hi:
            raise Capped(int(min(max(v, lo), hi)))
        return int(v)
    parse.range = f"an integer {lo}..{hi:,}"
    parse.lo, parse.hi = lo, hi
    return parse


def float_in(lo: float, hi: float):
    lo, hi = float(lo), float(hi)  # a float widget needs float bounds

    def parse(s: str) -> float:
        v = float(s)
        if not math.isfinite(v):
            raise ValueError
        if not lo <= v <= hi:
            raise Capped(min(max(v, lo), hi))
        return v
    parse.range = f"a number in [{lo:g}, {hi:g}]"
    parse.lo, parse.hi = lo, hi
    return parse


def text_of(max_chars: int):
    def parse(s: str) -> str:
        if len(s) > max_chars or "\x00" in s:
            raise ValueError
        return s
    parse.range = f"text of at most {max_chars:,} characters"
    parse.max_chars = max_chars
    parse.raw = True  # spaces are part of the text
    return parse


def number_choice(options, cast: type = float):
    """One of the numbers `options`, read as a number ("2", "2.0") and returned as cast."""
    opts = tuple(cast(o) for o in options)

    def parse(s: str):
        v = float(s)
        if not math.isfinite(v) or v not in opts:
            raise ValueError
        return cast(v)
    parse.range = "one of " + ", ".join(f"{o:,}" if cast is int else f"{o:g}" for o in opts)
    parse.options = opts
    return parse


def choice(options):
    opts = tuple(options)

    def parse(s: str) -> str:
        if s not in opts:
            raise ValueError
        return s
    parse.range = "one of " + ", ".join(opts)
    parse.options = opts
    return parse


def tree():
    def parse(s: str) -> str:
        if s:
            parse_paths(s)
        return s
    parse.range = (f"a token tree: paths like [[0], [1], [0, 0]] or a branching like 3-2-1, "
                   f"at most {PATHS_NODES_MAX} nodes and {PATHS_TEXT_MAX:,} characters")
    parse.explains = True  # the reason (which path is wrong) goes into the note
    parse.max_chars = PATHS_TEXT_MAX
    return parse


def blob():
    def parse(s: str) -> str:
        decode_blob(s)
        return s
    parse.range = "a compressed text (zlib + base64url) from a specviz link"
    parse.encode = lambda text: url_blob(text, "")[0]  # a held (pasted) text's URL form
    return parse
