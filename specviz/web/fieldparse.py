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


class Renamed(Capped):
    """A choice under its old name: the value it is now called, with a note."""


def _number_in(lo, hi, cast: type, words: str):
    """A number of type cast in [lo, hi] (an int: "4", "4.0" and "1e3" alike)."""
    def parse(s: str):
        v = float(s)
        if not math.isfinite(v) or v != cast(v):
            raise ValueError
        if not lo <= v <= hi:
            raise Capped(cast(min(max(v, lo), hi)))
        return cast(v)
    parse.range = words
    parse.lo, parse.hi = lo, hi
    return parse


def int_in(lo: int, hi: int):
    return _number_in(lo, hi, int, f"an integer {lo}..{hi:,}")


def float_in(lo: float, hi: float):
    lo, hi = float(lo), float(hi)  # a float widget needs float bounds
    return _number_in(lo, hi, float, f"a number in [{lo:g}, {hi:g}]")


def temperature(lo: float, hi: float):
    """0 (greedy decoding), or a number in [lo, hi]: a number in [0, hi] whose gap (0, lo)
    is held at lo (a number past the ends, at the nearest end)."""
    inner = float_in(0.0, hi)

    def parse(s: str) -> float:
        v = inner(s)
        if 0 < v < lo:
            raise Capped(float(lo))
        return v
    parse.range = f"0 (greedy) or a number in [{lo:g}, {hi:g}]"
    parse.lo, parse.hi, parse.gap = 0.0, float(hi), (0.0, float(lo))
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


def choice(options, renamed: dict[str, str] | None = None):
    """One of options; an old name in renamed reads as the option it is now (Renamed)."""
    opts, old = tuple(options), dict(renamed or {})

    def parse(s: str) -> str:
        if s in old:
            raise Renamed(old[s])
        if s not in opts:
            raise ValueError
        return s
    parse.range = "one of " + ", ".join(opts)
    parse.options, parse.renamed = opts, old
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
