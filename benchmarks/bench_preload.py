"""Does web.basehref pay? The same app served with and without it, side by side, loaded in turn.

Two servers from the image's command: `full` as shipped (web.basehref: the document names the
server's base, so a deep link's first health check goes there) and `none` (the server's
BaseHref wrapper left out: Streamlit's own document). Each round opens every page once on
every server, the servers in a new random order each time, in one warm browser context per
server (its cache holds the scripts, as for a returning visitor), and times a fresh page load
to its first heading and to every chart drawn (bench_browser's measure). It prints each page's
medians with their spread and the ratio none / full (above 1: the wrapper saves time), and
the same over every load. A loaded machine slows every server alike within a round; say when
it was busy.

This benchmark also judged the document's old import of Streamlit's lazy element code (then
mode `full`, against `base`, the base only): it did not pay and came out (web.basehref's
docstring has the numbers).

    .venv/bin/python benchmarks/bench_preload.py                 # 8 rounds, 8 pages
    .venv/bin/python benchmarks/bench_preload.py --rounds 12 --pages round,cost
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from bench_browser import VIEWPORT, _open  # noqa: E402
from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
    free_port,
    health,
    image_cmd,
    image_env,
    localise,
)
from playwright.sync_api import sync_playwright  # noqa: E402

PAGES = ("round", "acceptance", "exactness?n=2000", "draft-length", "cost", "roofline",
         "text", "rules")
# what each mode changes in the server before Streamlit starts (the image's command otherwise)
MODES = {
    "full": "",
    "none": "server.BaseHref = lambda app: app",
}


def _start(mode: str) -> Server:
    """The image's command with `-m specviz.web.server` run as code that first applies the
    mode's change."""
    port = free_port()
    argv = localise(image_cmd(), port, "127.0.0.1")
    at = argv.index("-m")
    code = ("import sys\nfrom specviz.web import server\n" + MODES[mode]
            + "\nserver.main(sys.argv[1:])\n")
    argv = [*argv[:at], "-c", code, *argv[at + 2:]]
    log_path = Path(tempfile.mkstemp(prefix=f"specviz-{mode}-", suffix=".log")[1])
    log = open(log_path, "w")  # closed by Server.stop
    env = {**os.environ, **image_env()}
    env.pop("STREAMLIT_SERVER_PORT", None)
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    server = Server(proc, port, argv, log_path, _log=log)
    t0 = time.monotonic()
    while not health(server.url, timeout=1.0):
        if proc.poll() is not None or time.monotonic() - t0 > 90:
            server.stop()
            raise RuntimeError(f"the {mode} server did not start:\n{server.log()}")
        time.sleep(0.1)
    return server


def _load(ctx, url: str) -> tuple[float, float]:
    """(seconds to the first heading, to every chart drawn) of a fresh page load in ctx
    (bench_browser's measure)."""
    _, page, _, heading, drawn = _open(None, url, ctx)
    page.close()
    return heading, drawn


def _line(name: str, xs: list[float]) -> str:
    return f"{name:<22} {statistics.median(xs):6.3f} s [{min(xs):.3f}..{max(xs):.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--modes", default="full,none")
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    modes, pages = a.modes.split(","), a.pages.split(",")
    rng = random.Random(a.seed)
    servers = {m: _start(m) for m in modes}
    drawn = {(m, p): [] for m in modes for p in pages}
    heading = {(m, p): [] for m in modes for p in pages}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                         headless=True)
            ctxs = {m: browser.new_context(viewport=VIEWPORT) for m in modes}
            for m in modes:  # warm each server and each context's cache on every page
                for p in pages:
                    _load(ctxs[m], f"{servers[m].url}/{p}")
            for r in range(a.rounds):
                for p in pages:
                    for m in rng.sample(modes, len(modes)):
                        h, d = _load(ctxs[m], f"{servers[m].url}/{p}")
                        heading[m, p].append(h)
                        drawn[m, p].append(d)
                print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
            browser.close()
    finally:
        for s in servers.values():
            s.stop()
    print(f"fully drawn, median [min..max] over {a.rounds} loads a page and server; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    for p in pages:
        print(f"/{p}")
        for m in modes:
            print("  " + _line(m, drawn[m, p]) + "   first heading "
                  + _line("", heading[m, p]).strip())
        for m in modes[1:]:
            ratios = [b / f for b, f in zip(drawn[m, p], drawn[modes[0], p], strict=True)]
            print(f"  {m} / {modes[0]}: {statistics.median(ratios):.3f} "
                  f"[{min(ratios):.2f}..{max(ratios):.2f}] (load by load)")
    for m in modes[1:]:
        ratios = [b / f for p in pages
                  for b, f in zip(drawn[m, p], drawn[modes[0], p], strict=True)]
        print(f"every load, {m} / {modes[0]}: median {statistics.median(ratios):.3f} "
              f"[{min(ratios):.2f}..{max(ratios):.2f}], n = {len(ratios)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
