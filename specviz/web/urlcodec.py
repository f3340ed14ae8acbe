"""Texts and tables as URL text, and back: a paste travels zlib-compressed and base64url-
encoded (a blob), a table as rows of numbers. Pure Python; each decoder raises ValueError
with a short reason, never echoing what arrived."""

from __future__ import annotations

import base64
import binascii
import zlib

BLOB_URL_MAX_CHARS = 6_000  # a compressed paste longer than this stays out of the link
BLOB_TEXT_MAX_CHARS = 2_000_000  # what a blob may expand to
# Tables in the URL: rows joined by ';', entries by ','; only when they differ from the default.
# 4,000 characters hold a 6 x 6 table at full precision many times over (~650) and about a
# 20 x 20 one; a longer table never goes into a link.
TABLE_URL_MAX_CHARS = 4_000


def encode_blob(text: str) -> str:
    """Text as URL text: zlib-compressed, base64url without padding; "" for no text."""
    if not text:
        return ""
    raw = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_blob(blob: str) -> str:
    """encode_blob's inverse; ValueError for anything that is not one (or expands too far)."""
    if not blob:
        return ""
    if len(blob) > BLOB_URL_MAX_CHARS:
        raise ValueError(f"longer than {BLOB_URL_MAX_CHARS:,} characters")
    try:
        raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        d = zlib.decompressobj()
        text = d.decompress(raw, BLOB_TEXT_MAX_CHARS + 1)
        if len(text) > BLOB_TEXT_MAX_CHARS or d.unconsumed_tail or not d.eof:
            raise ValueError("not a complete compressed text")
        return text.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError("not a compressed text") from exc


def url_blob(text: str, what: str) -> tuple[str, str | None]:
    """(blob for the URL, note): a paste whose blob exceeds the cap, or that is longer than
    a blob may expand to (it may compress well: "a" * 2,000,001), stays out of the link."""
    if len(text) > BLOB_TEXT_MAX_CHARS:
        return "", (f"The {what} is too long for a link ({len(text):,} characters; the cap "
                    f"is {BLOB_TEXT_MAX_CHARS:,}): the link keeps every other setting.")
    blob = encode_blob(text)
    if len(blob) <= BLOB_URL_MAX_CHARS:
        return blob, None
    return "", (f"The {what} is too long for a link ({len(blob):,} characters compressed; "
                f"the cap is {BLOB_URL_MAX_CHARS:,}): the link keeps every other setting, "
                "and whoever opens it must paste or upload it again.")


def encode_table(M) -> str:
    """A table as URL text: '0.1,0.9;0.5,0.5'."""
    return ";".join(",".join(f"{x:.10g}" for x in row) for row in M)


def decode_table(text: object, V: int) -> list[list[float]]:
    """URL text back to a V x V list of floats; raises ValueError with a short reason."""
    s = str(text)
    if len(s) > TABLE_URL_MAX_CHARS:
        raise ValueError(f"longer than {TABLE_URL_MAX_CHARS:,} characters")
    rows = [r for r in s.split(";")]
    if len(rows) != V:
        raise ValueError(f"has {len(rows)} rows, not {V}")
    out = []
    for r in rows:
        vals = [float(x) for x in r.split(",")]
        if len(vals) != V:
            raise ValueError(f"has a row of {len(vals)} entries, not {V}")
        out.append(vals)
    return out
