"""Server time per page: the first render and typical interactions, through AppTest.

Each page is run the way a server runs it for a new session (a fresh AppTest in a process
whose caches are cold for the first page visit, then warm), and each interaction is one
rerun after a widget change. Targets: an interaction re-renders in <= 300 ms,
a page's first render in <= 1.5 s, the exactness page's 10^6-decode run in < 1 s.

    .venv/bin/python benchmarks/bench_pages.py
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from scenarios import sc  # noqa: E402  (tests/scenarios.py)
from support import app_test  # noqa: E402  (tests/support.py: a page opened as a browser does)

for name in ("streamlit", "streamlit.runtime.scriptrunner_utils.script_run_context"):
    logging.getLogger(name).setLevel(logging.ERROR)  # AppTest's bare-mode chatter

OTHER_RULES = ("greedy", "lenient", "typical")


def _move_c(at: AppTest, i: int) -> None:
    at.slider(key="w_c").set_value(0.3 + 0.05 * i)


# page -> (file, interactions: (label, action(at, i) for repeat i, each a state not seen before,
# so no repeat is answered from the cache)
PAGES = {
    "/": ("app.py", [("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i))]),
    "/round": ("pages/1_round.py", [
        ("next", lambda at, i: at.button(key="round_next").click()),
        ("prev", lambda at, i: at.button(key="round_prev").click()),
        ("new round", lambda at, i: at.button(key="round_new").click()),
    ]),
    "/exactness": ("pages/2_exactness.py", [
        ("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i)),
        ("rule -> 3 others", lambda at, i: at.selectbox(key="w_rule").set_value(OTHER_RULES[i])),
        ("c -> 0.3, .35, .4", lambda at, i: at.slider(key="w_c").set_value(0.3 + 0.05 * i)),
    ]),
    "/acceptance": ("pages/3_acceptance.py", [
        ("c -> 0.3, .35, .4", lambda at, i: at.slider(key="w_c").set_value(0.3 + 0.05 * i)),
        ("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i)),
    ]),
    "/draft-length": ("pages/4_draft-length.py", [
        ("c -> 0.3, .35, .4", lambda at, i: at.slider(key="w_c").set_value(0.3 + 0.05 * i)),
        ("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i)),
    ]),
    "/cost": ("pages/5_cost.py", [
        ("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i)),
        ("c -> 0.3, .35, .4", lambda at, i: at.slider(key="w_c").set_value(0.3 + 0.05 * i)),
    ]),
    "/roofline": ("pages/6_roofline.py", [
        ("k -> 5, 6, 7", lambda at, i: at.slider(key="w_k").set_value(5 + i)),
    ]),
}
for extra, path in (("/rules", "pages/8_rules.py"), ("/text", "pages/7_text.py"),
                    ("/tour", "pages/9_tour.py")):
    if (ROOT / path).exists():
        PAGES[extra] = (path, [("c -> 0.3, .35, .4", _move_c)])


def timed_run(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run(timeout=120)
    dt = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return dt


def bench_page(name: str, path: str, actions, repeats: int = 3) -> list[tuple[str, float]]:
    at = app_test(path, 120)  # a new session, opened on the page through app.py
    out = [("first render (cold caches)", timed_run(at))]
    warm = []
    for _ in range(repeats):
        at2 = app_test(path, 120)
        warm.append(timed_run(at2))
    out.append(("first render (new session)", statistics.median(warm)))
    for label, act in actions:
        times = []
        for i in range(repeats):
            act(at, i)
            times.append(timed_run(at))
        out.append((label, statistics.median(times)))
    return out


def main() -> int:
    print("server time per page (AppTest script time, median of 3 where repeated)")
    misses = 0
    for name, (path, actions) in PAGES.items():
        for label, dt in bench_page(name, path, actions):
            first = label.startswith("first")
            target = 1.5 if first else 0.3
            ok = dt <= target
            misses += not ok
            print(f"  {name:14s} {label:28s} {dt * 1000:8.0f} ms   target <= {target * 1000:.0f} ms"
                  f"   {'PASS' if ok else 'MISS'}")
    from specviz import default_tables
    from specviz.views import demos

    T = default_tables()
    demos.exactness(sc(T.P, T.Q, 0, 4), n=1000)
    best = min(_time(lambda: demos.exactness(sc(T.P, T.Q, 0, 4), n=1_000_000)) for _ in range(3))
    ok = best < 1.0
    misses += not ok
    print(f"  /exactness     10^6 decodes x 4 rules (engine)  {best * 1000:8.0f} ms   "
          f"target < 1000 ms   {'PASS' if ok else 'MISS'}")
    print(f"{misses} miss(es)")
    return 0


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
