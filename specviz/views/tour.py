"""The guided tour as data: chapters, each a question posed at a preset state of the app
and a link to the state that answers it.

Pure (no Streamlit). A state is a page path and a query string whose parameters are
specviz.settings fields, so every link opens in a fresh session at exactly that state. The
numbers quoted in the answers are the default tables' (specviz.tables.default_tables), and
in the real-model chapter Gemma 3 270M's (round 0 of the /llm stage), in the Medusa
chapter the shipped heads' (their JSON) and the cost model's;
tests/views/test_tour.py and, for the real model, tests/llm/test_llm_tour.py recompute each
one from the engine, so the text cannot drift from what the linked page shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit


@dataclass(frozen=True)
class Chapter:
    """One stop of the tour: open `preset`, try the question, then open `answer_url`."""

    slug: str
    title: str
    question: str  # what to do at the preset, and what to look for (markdown)
    preset: str  # page path + query: the state that poses the question
    answer_url: str  # page path + query: the state that answers it
    answer: str  # the short answer (markdown), with its citation


CHAPTERS: tuple[Chapter, ...] = (
    Chapter(
        "one-token", "One token",
        "After the context **a** the draft proposes **e**, which it rates above the target "
        "(q = 0.448 against p = 0.382). How likely is **e** to stand, and if it falls, which "
        "token comes out instead? Step on with **next ▶** (or →).",
        "/round?k=1&seed=1&step=1",
        "/round?k=1&seed=1&step=4",
        "**e** stands with probability min(1, p/q) = 0.853. Here the coin comes up "
        "u = 0.950, above that line, so **e** falls. One token is then drawn from the "
        "residual norm(max(0, p − q)) = [0.167, 0.646, 0.184, 0.003, 0, 0] over a..f: only "
        "the tokens the draft under-proposes get mass, and **e** and **f**, which it "
        "over-proposes, get none. This time the draw is **a**. Kept mass min(p, q) plus "
        "redrawn mass max(0, p − q) add back to p (Leviathan et al. 2022, Algorithm 1 and "
        "Thm 3.5).",
    ),
    Chapter(
        "exactness", "Exactness",
        "With n = 2,000 decodes per rule, which rules pass as exact? Read the **verdict** "
        "column, then guess what more decodes would change.",
        "/exactness?n=2000",
        "/exactness?n=300000",
        "At 2,000 decodes the sampling floor (0.043) is wide enough to hide a small bias in "
        "TV: **continue** (exact TV 0.020) passes both tests next to the correct rule, so its "
        "verdict reads *not resolvable at this n*, and **no_resample** (0.089) stays under the "
        "TV threshold too; only the chi-square test catches it (p around 1e-10). At 300,000 "
        "the floor has shrunk like "
        "1/sqrt(n) to 0.0035: both are caught, "
        "levelling off at their exact TV, while the correct rule keeps falling with the floor "
        "(Leviathan et al. 2022, Thm 3.5; Chen et al. 2023, Thm 1).",
    ),
    Chapter(
        "acceptance", "Acceptance",
        "Here k = 4 and c = 0.1. Raise k to 8 in the sidebar: which draft qualities gain "
        "speed, and which lose it?",
        "/acceptance",
        "/acceptance?k=8",
        "A perfect copy (mix weight 1) goes from 3.57x to 5.00x: every extra guess stands. "
        "The junk draft (weight 0) goes from 1.20x to 0.95x, slower than no speculation: its "
        "extra guesses are almost all thrown away, and each still costs c. Tokens per call "
        "grow with k only as fast as the draft is right (Leviathan et al. 2022, eq. 1 and "
        "Thm 3.8).",
    ),
    Chapter(
        "draft-length", "Draft length",
        "Push k to 16: why does the speedup fall?",
        "/draft-length",
        "/round?k=16&step=21",
        "Tokens per call can only approach 1/(1 − alpha) = 4.48 on these tables: 3.22 at "
        "k = 4, 4.42 at k = 16. The price of a round, 1 + k c, grows from 1.4 to 2.6 target "
        "calls. So the speedup falls from 2.30x to 1.70x (the best is k = 5, 2.34x). The "
        "round on the answer link shows it happen: the first guess is rejected and the 15 "
        "after it are flushed, every one of them already paid for (Leviathan et al. 2022, "
        "eq. 1 and Thm 3.8).",
    ),
    Chapter(
        "cost", "Cost",
        "Price the draft at c = 0.6: what changed, and what did not?",
        "/cost",
        "/cost?c=0.6",
        "The speedup fell from 2.30x to 0.95x: slower than the target alone, because c passed "
        "the break-even c* = 0.556 at k = 4. What did not change: the acceptance, the tokens "
        "per call (3.22) and the text itself. c never enters the accept rule, so nothing in "
        "the output warns you (Leviathan et al. 2022, Thm 3.8).",
    ),
    Chapter(
        "roofline", "Roofline",
        "At batch 64, verifying k + 1 = 5 tokens per sequence still costs one decode step. "
        "Push k to 16: what does the verify pass cost now?",
        "/roofline?batch=64",
        "/roofline?batch=64&k=16",
        "1.63x a decode step. One pass now holds 64 x 17 = 1,088 tokens; beyond 10 tokens per "
        "sequence the H100 runs out of arithmetic before it runs out of bandwidth (the pass "
        "crosses the ridge), so every further draft costs real time. At batch 1, 298 tokens "
        "ride free (Leviathan et al. 2022, §1 and §3.4; the ridge is the roofline model's).",
    ),
    Chapter(
        "rules", "Rules",
        "Lenient acceptance keeps far more drafts than the standard rule. Find it on the "
        "chart: is its extra speed free? Which rule keeps more drafts at no cost?",
        "/rules",
        "/exactness?rule=lenient&n=300000",
        "Not free: lenient keeps 91% of the drafts against the standard rule's 56%, and its "
        "text sits 0.21 in TV from the target's, caught at any n here (Leviathan et al. 2022, "
        "the lenience parameter of its appendix). Multi-draft verification keeps 81% with "
        "no bias at all: several candidates per position, each tried against the residual "
        "left by the last (Miao et al. 2024, SpecInfer).",
    ),
    Chapter(
        "text", "Real text",
        "Letters now, not a..f: a 6-gram target and a 2-gram draft trained on real text. "
        "Heat the draft up to T = 2 in the sidebar: what happens to acceptance, and to the "
        "text?",
        "/text",
        "/text?T=2",
        "Acceptance falls at every draft order (see **Which draft order?**): a hotter draft "
        "spreads its q over characters the target rarely writes, and min(1, p/q) turns each "
        "of them down. Fewer tokens per call, so less speed; the text is still exactly the "
        "target's, since the draft's temperature changes only how many guesses survive "
        "(Leviathan et al. 2022, Thm 3.5).",
    ),
    Chapter(
        "real-model", "Real model",
        "Now a real transformer: Gemma 3 270M continues the story preset, and its draft is "
        "the same model stopped after 12 of its 18 layers (early exit). Its first guess is "
        "**␣loves**, at q = 0.414. Step on (next ▶ or →) until the full model has checked "
        "it: does the guess stand, how often would a first guess stand here, and what is "
        "written instead? The first visit loads the model, about a minute.",
        "/llm?llm_kind=early-exit&llm_arg=12&step=1",
        "/llm?llm_kind=early-exit&llm_arg=12&step=7",
        "It falls. The full model gives **␣loves** only p = 0.0003, so the coin must land "
        "under min(1, p/q) = 0.0007; it shows u = 0.8133, and the three guesses after it "
        "are flushed. Whatever it drafts at this point, its first guess stands with chance "
        "sum_x min(p, q) = 0.112 (summed over all 262,144 tokens): about one round in nine. "
        "A draft that skips only layers 4 and 8 reaches 0.477, and the page's default draft, "
        "every layer and a head over the 16,384 most frequent tokens, more still. The "
        "token written instead comes from the residual norm(max(0, p − q)): the draft's "
        "over-bets removed, the rest rescaled by 1/(1 − 0.112), so **␣loved**, the full "
        "model's favourite, rises from p = 0.315 to 0.328. This time the draw is "
        "**␣liked**: one target call, one token, and still a sample of the full model "
        "(Leviathan et al. 2022, Algorithm 1 and Thm 3.5; a draft made of the model's own "
        "first layers: Zhang et al. 2023, Draft & Verify; Elhoushi et al. 2024, LayerSkip).",
    ),
    Chapter(
        "medusa", "One model drafting for itself",
        "What came next: the same Gemma 3 270M drafts for itself. Four small Medusa heads, "
        "trained here on its own text, read the hidden state its last pass left behind and "
        "guess the next four tokens at once; T = 0, so a guess stands exactly when it is the "
        "model's own choice. Step through the round: which head proposed each token (the "
        "chips say), and what does a guess cost?",
        "/llm?llm_kind=medusa&llm_arg=4:0&llm_T=0&step=1",
        "/measured?m_draft=medusa%3A4&m_T=0",
        "Each head is one 640 x 640 matrix on top of the model's own output rows, so a guess "
        "costs c = 0.021 of a pass by multiply-adds (the trimmed head's draft: 0.41), and no "
        "pass of a model at all: head i reads h, the state the target's last pass already "
        "computed, and proposes the token i + 1 ahead. Later heads guess further ahead and "
        "miss more: on held-out text their top-1 matched the model's own token 0.30, 0.17, "
        "0.12 and 0.10 of the time, and a round keeps draft i only when heads 1..i all "
        "matched. The text is still exactly the model's (greedy: argmax match; sampled: the "
        "same rejection rule, since each head's q is known before its draw). The link lets "
        "every head draft (medusa:4:0); medusa:4 itself stops a round at the first head "
        "whose top probability is under 0.31, a stop that reads only the heads' own rows and "
        "so keeps the text exact. Whether it wins here depends on the verification pass over "
        "k + 1 positions: press Measure (Leviathan et al. 2022; Cai et al. 2024, Medusa).",
    ),
)
CHAPTER_MAX = len(CHAPTERS) - 1  # the tour's last chapter index


def split(url: str) -> tuple[str, dict[str, str]]:
    """'/cost?c=0.6' -> ('/cost', {'c': '0.6'})."""
    parts = urlsplit(url)
    return parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))


def href(url: str, present: bool = False) -> str:
    """A link that works wherever the app is mounted: relative to the tour's own page
    ('cost?c=0.6' from /tour reaches /cost), with present=1 added in presenter mode."""
    path, query = split(url)
    if present:
        query["present"] = "1"
    q = urlencode(query)
    return path.lstrip("/") + (f"?{q}" if q else "")


def label(i: int) -> str:
    """'3 · Acceptance' for chapter index 2."""
    return f"{i + 1} · {CHAPTERS[i].title}"


def neighbours(i: int) -> tuple[int | None, int | None]:
    """The chapters before and after chapter i (None at either end)."""
    return (i - 1 if i > 0 else None), (i + 1 if i < len(CHAPTERS) - 1 else None)


def outline() -> list[dict[str, str]]:
    """One row per chapter: its number and title, the page it opens, and the question."""
    return [{"chapter": label(i), "page": split(ch.preset)[0], "question": ch.question}
            for i, ch in enumerate(CHAPTERS)]
