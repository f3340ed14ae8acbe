"""Aligned text tables for the command line: the demonstrations and the planner."""

from __future__ import annotations

from collections.abc import Callable, Sequence

Column = tuple[str, str, str | Callable[[object], str]]  # (key, header, format spec or function)


def _cell(value: object, fmt: str | Callable[[object], str]) -> str:
    if value is None:
        return "-"
    if callable(fmt):
        return fmt(value)
    if isinstance(value, str):
        return value
    return format(value, fmt)


def format_table(rows: Sequence[dict], columns: Sequence[Column], indent: str = "  ") -> str:
    """Rows of dicts as an aligned text table; columns: (key, header, format) each.

    format is a format spec (".4f") or a function value -> str. Text columns are
    left-aligned, numbers right-aligned.
    """
    cells = [[_cell(r.get(key), fmt) for key, _, fmt in columns] for r in rows]
    left = [all(isinstance(r.get(key), str) for r in rows) and len(rows) > 0
            for key, _, _ in columns]
    widths = [max([len(h)] + [len(c[j]) for c in cells]) for j, (_, h, _) in enumerate(columns)]

    def line(items: Sequence[str]) -> str:
        parts = [s.ljust(w) if lj else s.rjust(w)
                 for s, w, lj in zip(items, widths, left, strict=True)]
        return (indent + "  ".join(parts)).rstrip()

    out = [line([h for _, h, _ in columns]), indent + "  ".join("-" * w for w in widths)]
    out += [line(c) for c in cells]
    return "\n".join(out)
