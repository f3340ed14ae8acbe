"""The one palette of specviz: Okabe & Ito (2008), "Color Universal Design".

Every figure, chip and export takes its colours from here. The eight colours stay apart
for the common forms of colour blindness; each status of a token also has a symbol and a
word (MARKS), so no meaning rests on colour alone. Yellow and sky blue lose their contrast
on white, so they never carry a line or a text label (PROJECTOR leaves them out).
"""

from __future__ import annotations

from dataclasses import dataclass

OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
}
BLACK, ORANGE, SKY, GREEN = (OKABE_ITO[k] for k in ("black", "orange", "sky", "green"))
YELLOW, BLUE, VERMILLION, PURPLE = (OKABE_ITO[k] for k in ("yellow", "blue", "vermillion",
                                                           "purple"))
GREY = "#767676"  # neutral marks: the darkest grey that still reads as grey, 4.5:1 on white
PALE = "#BBBBBB"  # inactive bars

# the colours whose contrast on white survives a projector, darkest first
PROJECTOR = {"black": BLACK, "blue": BLUE, "vermillion": VERMILLION, "green": GREEN,
             "purple": PURPLE, "orange": ORANGE}
SERIES = (BLUE, VERMILLION, GREEN, PURPLE, ORANGE, BLACK, SKY, GREY)  # lines in turn

P_COLOUR = BLUE  # target p
Q_COLOUR = ORANGE  # draft q
LAW_COLOUR = PURPLE  # the law a rejection (or bonus) token is drawn from

MEASURED, EXACT, THEORY = BLUE, GREEN, VERMILLION  # markers, solid line, dashed line
FLOOR, THRESHOLD = GREY, VERMILLION
BEST, BREAK_EVEN = ORANGE, VERMILLION  # the best k, speedup = 1
RULE_COLOURS = {"correct": GREEN, "greedy": VERMILLION, "no_resample": ORANGE,
                "continue": PURPLE}
OTHER_RULE_COLOURS = (BLUE, SKY, BLACK, GREY)
FAMILY_COLOURS = {"lossless": GREEN, "lossy by design": ORANGE, "broken": VERMILLION}
POLICY_COLOURS = {"constant": GREY, "heuristic": BLUE, "confidence": ORANGE,
                  "oracle": GREEN}
ACCEL_COLOURS = (PURPLE, BLUE, GREEN, BLACK)


def series(i: int) -> str:
    """The i-th colour of a list of lines."""
    return SERIES[i % len(SERIES)]


@dataclass(frozen=True)
class Mark:
    """How one status of a token is drawn: colour, symbol and a word."""

    colour: str
    symbol: str
    label: str


MARKS: dict[str, Mark] = {
    "context": Mark(BLACK, "▸", "context"),
    "pending": Mark(GREY, "·", "not drafted yet"),
    "drafted": Mark(GREY, "?", "drafted"),
    "accepted": Mark(GREEN, "✓", "kept"),
    "rejected": Mark(VERMILLION, "✗", "rejected"),
    "resampled": Mark(PURPLE, "↻", "redrawn"),
    "bonus": Mark(SKY, "★", "bonus"),
    "plain": Mark(BLUE, "●", "plain decoding"),
    "flushed": Mark(GREY, "✂", "flushed"),
    "unverified": Mark(ORANGE, "⚠", "unchecked"),
}
LEGEND_STATUSES = ("accepted", "rejected", "resampled", "bonus", "flushed", "unverified")
