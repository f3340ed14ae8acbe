"""Speed as a user feels it: a real server and headless chromium, medians over a few runs.

Per page: for a fresh page load (a deep link, a new tab), time to the first heading and to
every chart drawn (the script idle, nothing stale, every Plotly chart with its SVG), in a
browser that has loaded the app before (its cache holds Streamlit's and Plotly's scripts),
and once more from a cold cache; the bytes the server sent over the WebSocket for that first
render. Then a click on the page's link in the app's navigation, to every chart drawn: from
the home page (the session's first page with charts: Streamlit loads Plotly then) and from
/round (Plotly loaded). Per interaction (a
step on /round and /text by a click on "next" and by the → key, k on /cost, the rule on
/round): time to the updated view (a step: from the input event to the new step counter,
both stamped in the page), and the bytes sent for it. Against the floor of
this stack: a bare Streamlit page with one Plotly chart (bench_chartlib's app, served beside
the app), loaded the same way and interleaved with each page's loads in the same run, so a
loaded machine slows both alike; the table gives each page's ratio to it. Targets: every page
fully drawn within 1.3x of the floor (/cost's 3D tab within 1.5x), a step in 150 ms
(median), a sidebar change on a chart page in 1 s.

    .venv/bin/python benchmarks/bench_browser.py            # 3 runs of everything
    .venv/bin/python benchmarks/bench_browser.py --runs 5 --pages round,cost
    .venv/bin/python benchmarks/bench_browser.py --loads-only   # pages against the floor
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import tempfile  # noqa: E402

from bench_chartlib import _serve  # noqa: E402
from harness import CHROMIUM, CHROMIUM_ARGS, IDLE, SETTLED_JS, start_server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from specviz.views import site  # noqa: E402

PAGE_TARGET_S, STEP_TARGET_S, CHANGE_TARGET_S = 2.5, 0.150, 1.0
FLOOR_RATIO, FLOOR_RATIO_3D = 1.3, 1.5  # a page's fully drawn time against the bare page's
EXTRA = {"cost?surface=3d": "cost"}  # deep links timed besides the pages (their target 1.5x)
DRAWN_JS = ("() => [...document.querySelectorAll('.stPlotlyChart')].every("
            "c => c.querySelector('.main-svg'))")
QUERY = {"exactness": "?n=2000"}  # keeps the Monte Carlo of a first render short
VIEWPORT = {"width": 1440, "height": 900}
LOADS_A_MODEL = ("llm",)  # pages whose first visit loads a model into the server (minutes)


class Wire:
    """Bytes the server sends over the page's WebSocket, from a mark on."""

    def __init__(self, page) -> None:
        self.total = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        self.total += len(payload)

    def since(self, mark: int) -> int:
        return self.total - mark


def _idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)
    page.wait_for_function(SETTLED_JS, timeout=timeout)
    page.wait_for_function(DRAWN_JS, timeout=timeout)


def _open(browser, url: str, ctx=None):
    """Open url in a new page (of ctx, or of a fresh context: a cold browser cache)."""
    if ctx is None:
        ctx = browser.new_context(viewport=VIEWPORT)
        ctx.add_init_script(INPUT_JS)
    page = ctx.new_page()
    wire = Wire(page)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("h1", timeout=90_000)
    heading = time.perf_counter() - t0
    _idle(page, 90_000)
    drawn = time.perf_counter() - t0
    return ctx, page, wire, heading, drawn


# In the page: when the last click or key press came, and when the step counter last changed
# (performance.now(), ms), so that a step is timed from the user's input to the view.
INPUT_JS = """
window.__sv = {input: 0, counter: 0, text: null};
for (const t of ['pointerdown', 'keydown'])
  addEventListener(t, () => { window.__sv.input = performance.now(); }, true);
addEventListener('DOMContentLoaded', () => new MutationObserver(() => {
  const c = document.querySelector('.sv-counter'), t = c && c.innerText;
  if (t && t !== window.__sv.text) {
    window.__sv.text = t; window.__sv.counter = performance.now(); }
}).observe(document.body, {subtree: true, childList: true, characterData: true}));
"""


def _step(page, wire: Wire, how: str) -> tuple[float, int]:
    """One step on the stage, by a click on "next" or by the → key: time from the input
    event to the counter showing the next step, both stamped in the page."""
    before = page.locator(".sv-counter").first.inner_text()
    _idle(page)
    mark = wire.total
    if how == "click":
        stage = page.url.split("/")[-1].split("?")[0]  # round | text: the stage's key prefix
        page.locator(f".st-key-{stage}_next button").first.click()
    else:
        page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "b => { const c = document.querySelector('.sv-counter'); return c && c.innerText !== b; }",
        arg=before, timeout=30_000)
    sv = page.evaluate("window.__sv")
    _idle(page)
    return (sv["counter"] - sv["input"]) / 1e3, wire.since(mark)


def _change(page, wire: Wire, act, done_js: str, arg) -> tuple[float, int]:
    _idle(page)
    mark = wire.total
    t0 = time.perf_counter()
    act()
    page.wait_for_function(done_js, arg=arg, timeout=60_000)
    _idle(page)
    return time.perf_counter() - t0, wire.since(mark)


def _k_on_cost(page, wire: Wire) -> tuple[float, int]:
    """k one up with the keyboard on the sidebar's slider: time until the page has rerun
    with the new k (its break-even metric names it) and every chart is drawn again."""
    value = page.locator(".st-key-w_k [data-testid='stSliderThumbValue']")
    k0 = value.inner_text().strip()

    def act() -> None:
        page.locator(".st-key-w_k input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
    moved = ("k => { const v = document.querySelector(\".st-key-w_k "
             "[data-testid='stSliderThumbValue']\"); return v && v.innerText.trim() !== k"
             " && document.body.innerText.includes('k = ' + v.innerText.trim()); }")
    return _change(page, wire, act, moved, k0)


def _rule_on_round(page, wire: Wire) -> tuple[float, int]:
    def act() -> None:
        box = page.locator(".st-key-w_rule input").first
        box.click()
        box.fill("greedy")
        page.keyboard.press("Enter")
    shown = ("() => { const c = document.querySelector('.sv-counter');"
             " return c && c.innerText.includes('greedy'); }")
    return _change(page, wire, act, shown, None)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _row(name: str, xs: list[float], target: float | None, unit: str = "s") -> str:
    m = _median(xs)
    verdict = "" if target is None else ("  ok" if m <= target else f"  MISS (> {target:g})")
    spread = f"{min(xs):.3f}..{max(xs):.3f}" if xs else ""
    return f"{name:<34} {m:8.3f} {unit}  [{spread}]{verdict}"


def _loads(browser, url: str, runs: int) -> tuple[list, list, list, list]:
    """Fresh loads of url: a cold cache first, then twice in the same browser again."""
    heads, drawns, sent, cold = [], [], [], []
    for _ in range(runs):
        ctx, page, wire, _, drawn = _open(browser, url)
        cold.append(drawn)
        page.close()
        for _ in range(2):
            _, page, wire, heading, drawn = _open(browser, url, ctx)
            heads.append(heading)
            drawns.append(drawn)
            sent.append(wire.total / 1e3)
            page.close()
        ctx.close()
    return heads, drawns, sent, cold


def _page_loads(browser, url: str, name: str, runs: int, floor_url: str | None,
                floors: list[float], ratio: float = FLOOR_RATIO) -> int:
    """A fresh page load (a deep link or a new tab): first heading, fully drawn, cold; the
    bare page's loads taken run by run beside it (into floors), and the ratio to them."""
    heads, drawns, sent, cold, mine = [], [], [], [], []
    for _ in range(runs):
        if floor_url:
            bare = _loads(browser, floor_url, 1)[1]
            mine += bare
            floors += bare
        h, d, s, c = _loads(browser, url, 1)
        heads, drawns, sent, cold = heads + h, drawns + d, sent + s, cold + c
    print(_row(f"{name} first heading", heads, None))
    print(_row(f"{name} fully drawn", drawns, None if floor_url else PAGE_TARGET_S))
    print(_row(f"{name} fully drawn, cold cache", cold, None))
    print(_row(f"{name} first render sent", sent, None, "kB"))
    if not floor_url:
        return _median(drawns) > PAGE_TARGET_S
    r = _median(drawns) / _median(mine)
    print(f"{name + ' / floor':<34} {r:8.2f} x  (floor {_median(mine):.3f} s)"
          + ("  ok" if r <= ratio else f"  MISS (> {ratio:g}x)"))
    return r > ratio


def _navigations(browser, base: str, p, runs: int) -> int:
    """A click on the page's link in the sidebar: from the home page (this session's first
    page with charts, so Streamlit loads Plotly) and from /round (Plotly loaded)."""
    misses = 0
    for start in ("", "round" if p.path != "round" else "cost"):
        times = []
        for _ in range(runs):
            ctx, page, _, _, _ = _open(browser, f"{base}/{start}")
            t0 = time.perf_counter()
            page.locator(".st-key-sv_nav a").nth(site.PAGES.index(p)).click()
            page.wait_for_function("p => location.pathname.endsWith(p)", arg=f"/{p.path}")
            _idle(page, 90_000)
            times.append(time.perf_counter() - t0)
            ctx.close()
        print(_row(f"/{start} -> /{p.path} link", times, PAGE_TARGET_S))
        misses += _median(times) > PAGE_TARGET_S
    return misses


def _interactions(browser, base: str, runs: int, steps: int) -> int:
    misses = 0
    for label, path, fn, target in (
            ("/round step, click", "/round?k=5&seed=3", "click", STEP_TARGET_S),
            ("/round step, key", "/round?k=5&seed=3", "key", STEP_TARGET_S),
            ("/text step, click", "/text?k=4", "click", STEP_TARGET_S),
            ("/text step, key", "/text?k=4", "key", STEP_TARGET_S),
            ("/cost k change", "/cost", "k", CHANGE_TARGET_S),
            ("/round rule change", "/round?k=5&seed=3", "rule", CHANGE_TARGET_S)):
        times, sent = [], []
        for _ in range(runs):
            ctx, page, wire, _, _ = _open(browser, base + path)
            for _ in range(steps if fn in ("click", "key") else 1):
                if fn in ("click", "key"):
                    dt, b = _step(page, wire, fn)
                else:
                    dt, b = (_k_on_cost if fn == "k" else _rule_on_round)(page, wire)
                times.append(dt)
                sent.append(b / 1e3)
            ctx.close()
        print(_row(label, times, target))
        print(_row(f"{label} sent", sent, None, "kB"))
        misses += _median(times) > target
    return misses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8, help="steps timed per run")
    ap.add_argument("--pages", default="", help="comma-separated paths (default: all)")
    ap.add_argument("--loads-only", action="store_true",
                    help="only the fresh loads against the floor")
    ap.add_argument("--no-floor", action="store_true", help="no bare page beside the loads")
    ap.add_argument("--interactions-only", action="store_true",
                    help="only the steps, key presses and changes")
    a = ap.parse_args(argv)
    chosen = a.pages.split(",") if a.pages else []
    wanted = [p for p in site.PAGES if not chosen or (p.path or "home") in chosen]
    extra = [(path, of) for path, of in EXTRA.items() if not chosen or of in chosen]
    server = start_server()
    misses = 0
    with tempfile.TemporaryDirectory() as tmp:
        bare, floor = (None, None) if a.no_floor or a.interactions_only else _serve(Path(tmp))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                             headless=True)
                _open(browser, server.url + "/round")[0].close()  # warm the caches once
                floor_url = floor and floor + "/?kind=plotly"
                if floor_url:
                    _open(browser, floor_url)[0].close()
                for p in (p for p in wanted if p.path in LOADS_A_MODEL):  # timed as visitors
                    ctx = browser.new_context(viewport=VIEWPORT)  # after the first find the
                    ctx.new_page().goto(server.url + "/" + p.path)  # model loaded
                    ctx.pages[0].locator(".sv-counter").first.wait_for(timeout=900_000)
                    ctx.close()
                print(f"{'page':<34} {'median':>10}  [min..max]   (runs: {a.runs})")
                floors: list[float] = []
                for p in [] if a.interactions_only else wanted:
                    url = server.url + "/" + p.path + QUERY.get(p.path, "")
                    misses += _page_loads(browser, url, f"/{p.path}", a.runs, floor_url, floors)
                for path, _ in [] if a.interactions_only else extra:
                    misses += _page_loads(browser, f"{server.url}/{path}", f"/{path}", a.runs,
                                          floor_url, floors, FLOOR_RATIO_3D)
                if floors:
                    print(_row("floor: bare page, one Plotly chart", floors, None))
                if not a.loads_only:
                    for p in [] if a.interactions_only else wanted:
                        if p.path:
                            misses += _navigations(browser, server.url, p, a.runs)
                    misses += _interactions(browser, server.url, a.runs, a.steps)
                browser.close()
        finally:
            server.stop()
            if bare is not None:
                bare.terminate()
                bare.wait(timeout=10)
    print("all targets met" if not misses else f"{misses} target(s) missed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
