"""What a user pastes, read defensively: JSON with one clear error for whatever json refuses,
whole numbers checked (finite, integral, in range) before anything is sized or divided by
them, and values quoted short in messages.
"""

from __future__ import annotations

import json
import math
import numbers
import reprlib

SHOW_CHARS = 40  # most characters of a pasted value quoted in a message
ECHO_NAMES, ECHO_CHARS = 3, 60  # what a message repeats of the names it was given


def _repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother, r.maxlong = (
        2, 4, 4, SHOW_CHARS, SHOW_CHARS, SHOW_CHARS)
    return r


_REPR = _repr()


class PasteError(ValueError):
    """Pasted text that cannot be read; the message says why (callers add what it was)."""


def show(x: object) -> str:
    """x as a message quotes it: a short repr (a huge integer by its number of digits)."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 64:
        return f"a number of {math.floor(math.log10(abs(x))) + 1:,} digits"
    return cut(_REPR.repr(x))


def cut(text: str, chars: int = SHOW_CHARS) -> str:
    """text as a message quotes it, unquoted: at most `chars` characters."""
    return text if len(text) <= chars else text[:max(chars - 3, 1)] + "..."


def listed(names, *, most: int = ECHO_NAMES, chars: int = ECHO_CHARS) -> str:
    """names as 'a, b, c and 17 more', each cut to chars: a message about input that does
    not grow with it."""
    names = [str(n) for n in names]
    more = f" and {len(names) - most:,} more" if len(names) > most else ""
    return ", ".join(cut(n, chars) for n in names[:most]) + more


def whole(x: object, *, lo: int | None = None, hi: int | None = None) -> int | None:
    """int(x) when x is a whole number (finite, integral, not a bool) in lo..hi (None: no
    bound); else None."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if (lo is not None and x < lo) or (hi is not None and x > hi) or x != int(x):
        return None
    return int(x)


def at_least(x: object, lo: int, name: str, what: str) -> int:
    """x as a whole number >= lo (whole), else ValueError naming it as "name (what)"."""
    n = whole(x, lo=lo)
    if n is None:
        raise ValueError(f"{name} ({what}) must be an integer >= {lo}; got {x!r}")
    return n


def sized(text: object, what: str, cap: int, error: type[ValueError] = PasteError) -> str:
    """text, when it is text that is not blank and at most cap characters long; else error
    saying which (`what` names the text)."""
    if not isinstance(text, str) or not text.strip():
        raise error(f"{what} is empty")
    if len(text) > cap:
        raise error(f"{what} is {len(text):,} characters; the cap is {cap:,}")
    return text


def read_json(text: str) -> object:
    """json.loads(text); PasteError for invalid JSON, nesting deeper than the reader
    recurses, or an integer longer than Python converts."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PasteError(f"this is not valid JSON ({exc})") from None
    except RecursionError:
        raise PasteError("the JSON is nested too deeply to read (a server's response or a "
                         "config.json is a few levels deep)") from None
    except ValueError as exc:  # an integer of more digits than int() converts
        raise PasteError(f"the JSON holds a number too long to read ({str(exc)[:60]})") \
            from None
