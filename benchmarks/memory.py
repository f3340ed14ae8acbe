"""Peak server memory per page: each page's most expensive request, one after another.

    .venv/bin/python benchmarks/memory.py
    .venv/bin/python benchmarks/memory.py --pages text rules

It starts one server with the Docker image's entry command (tests/e2e/harness.py; localhost
only), opens Debian's chromium, and for each page opens its most expensive URL (the caps'
worst case: largest k, n, rules, model; /text also runs its exactness check), in a fresh
browser context. The server's resident memory (VmRSS from /proc; psutil is not in the lock)
is sampled every 20 ms: the table shows it before the request, its peak during the request,
after it, and the seconds until the page had finished.

Then the memory that visitors leave behind: VISITORS distinct /text URLs (a fresh context
each, closed once the page has drawn), the server's RSS after the last one closed, and again
every 30 s while the server sits idle for IDLE_S seconds (past the disconnected-session TTL,
120 s by default), so a server that keeps what closed sessions held shows it.

    .venv/bin/python benchmarks/memory.py --pages --visitors 50 --idle-s 120   # that part only

The real model (--llm; no browser: raw WebSocket clients, tests/e2e/rawclient.py): after one
/llm visit has loaded the model, its idle RSS; then each visitor load in turn, the peak
during it and the RSS AFTER_S after its last session closed: five distinct trimmed links (a
head each, at the pages' cap), one press of Measure with every draft at k = 8 and 64 tokens,
and COLD_CLIENTS clients opening one unplayed /llm link within COLD_WITHIN_S (each one's
finish time: the slowest against the first).

    .venv/bin/python benchmarks/memory.py --llm
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import rawclient  # noqa: E402
from harness import CHROMIUM, CHROMIUM_ARGS, IDLE, SETTLED_JS, start_server  # noqa: E402

WORST = {  # page -> (its most expensive URL, a button to press once it has drawn, or None)
    "home": ("/?k=32", None),
    "round": ("/round?k=32&rnd=999&step=60", None),
    "exactness": ("/exactness?n=10000000&k=1&rule=multi_draft", None),
    "acceptance": ("/acceptance?k=32", None),
    "draft-length": ("/draft-length?k=32", None),
    "cost": ("/cost?k=32", None),
    "roofline": ("/roofline?k=32&ctxlen=131072&batch=4096", None),
    "text": ("/text?level=word&order=4&k=32&rule=typical&T=10&rnd=999", "Run the check"),
    "rules": ("/rules?rules_n=2000000&k=32&multi_draft_m=8", None),
    "plan": ("/plan?plan_kmax=16", None),
    "tour": ("/tour", None),
}
VISITORS, IDLE_S, IDLE_EVERY_S = 50, 120.0, 30.0
TRIMMED = [f"llm_kind=trimmed&llm_arg={n}" for n in (32768, 32767, 32766, 32765, 32764)]
MEASURE = "m_draft=all&m_k=8&m_new=64"
COLD = "rnd=3&step=5&seed=4242"  # a seed no earlier phase played
COLD_CLIENTS, COLD_WITHIN_S, AFTER_S = 25, 10.0, 60.0


def visitor_url(i: int) -> str:
    """The i-th distinct /text visitor: its own target order, target temperature, seed and
    round (new counts, decoders and results)."""
    return f"/text?order={3 + i % 6}&Tp={0.5 + 0.01 * i:.2f}&seed={i}&rnd={i}"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/<pid>/status")


class Sampler:
    """The largest VmRSS seen since the last reset, sampled in a thread."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.peak = pid, every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(self.every_s)

    def reset(self) -> float:
        self.peak = rss_mb(self.pid)
        return self.peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def settle(page, timeout_ms: float) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, state="attached", timeout=timeout_ms)
    page.wait_for_function(SETTLED_JS, timeout=timeout_ms)


def measure(browser, url: str, button: str | None, sampler: Sampler,
            timeout_ms: float) -> tuple[float, float, float, float]:
    """(before, peak, after MB, seconds) for one request in a fresh context."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(timeout_ms)
    page = ctx.new_page()
    before = sampler.reset()
    t0 = time.monotonic()
    page.goto(url)
    settle(page, timeout_ms)
    if button:
        page.get_by_text("Check exactness at this prompt").click()
        page.get_by_role("button", name=button).click()
        settle(page, timeout_ms)
    seconds = time.monotonic() - t0
    peak = sampler.peak
    ctx.close()
    time.sleep(0.5)
    return before, peak, rss_mb(sampler.pid), seconds


def visitors(browser, base: str, sampler: Sampler, n: int, idle_s: float,
             timeout_ms: float) -> list[tuple[str, float]]:
    """(moment, RSS MB) rows: before, after n distinct /text visitors, and while idle."""
    rows = [("before the visitors", rss_mb(sampler.pid))]
    t0 = time.monotonic()
    for i in range(n):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(timeout_ms)
        page = ctx.new_page()
        page.goto(base + visitor_url(i))
        settle(page, timeout_ms)
        ctx.close()
    rows.append((f"after {n} distinct /text visitors ({time.monotonic() - t0:.0f} s), "
                 "last tab closed", rss_mb(sampler.pid)))
    waited = 0.0
    while waited < idle_s:
        step = min(IDLE_EVERY_S, idle_s - waited)
        time.sleep(step)
        waited += step
        rows.append((f"idle {waited:.0f} s", rss_mb(sampler.pid)))
    return rows


def _trimmed(port: int) -> str:
    with contextlib.ExitStack() as held:  # the five visitors stay until the last has run
        for query in TRIMMED:
            rawclient.run_script(held.enter_context(rawclient.session(port)), "llm", query,
                                 timeout_s=900)
    return "five links"


def _measure(port: int) -> str:
    with rawclient.session(port) as ws:
        return f"{rawclient.press(ws, 'measured', MEASURE, 'Measure', timeout_s=1800):.0f} s"


def _cold(port: int) -> str:
    """COLD_CLIENTS sessions on one unplayed link, started evenly over COLD_WITHIN_S; each
    one's finish, seconds from the first start."""
    done, t0 = [], time.monotonic()

    def client(i: int) -> None:
        time.sleep(i * COLD_WITHIN_S / COLD_CLIENTS)
        with rawclient.session(port) as ws:
            rawclient.run_script(ws, "llm", COLD, timeout_s=900)
            done.append(time.monotonic() - t0)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(COLD_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.sort()
    return (f"{len(done)} finished: first {done[0]:.1f} s, median {done[len(done) // 2]:.1f} s, "
            f"slowest {done[-1]:.1f} s ({done[-1] - done[0]:.1f} s after the first)")


def llm_phases(srv, sampler: Sampler) -> list[tuple]:
    """(phase, idle, peak, after AFTER_S, what it did, seconds) for each real-model load."""
    with rawclient.session(srv.port) as ws:  # the model loads, once per process
        rawclient.run_script(ws, "llm", "", timeout_s=900)
    time.sleep(AFTER_S)
    rows = []
    for name, run in (("five distinct trimmed links", _trimmed),
                      ("Measure: every draft, k = 8, 64 tokens", _measure),
                      (f"{COLD_CLIENTS} clients on a cold /llm link", _cold)):
        idle = sampler.reset()
        t0 = time.monotonic()
        what = run(srv.port)
        secs, peak = time.monotonic() - t0, sampler.peak
        time.sleep(AFTER_S)
        rows.append((name, idle, peak, rss_mb(srv.pid), what, secs))
        print(f"{name}: idle {idle:.0f}, peak {peak:.0f}, after {rows[-1][3]:.0f} MB; {what}",
              file=sys.stderr)
    return rows


def print_llm(rows: list[tuple]) -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end\n")
    print(f"| real-model load | idle RSS (MB) | peak (MB) | {AFTER_S:.0f} s after (MB) | "
          "what it did | seconds |\n| --- | ---: | ---: | ---: | --- | ---: |")
    for name, idle, peak, after, what, secs in rows:
        print(f"| {name} | {idle:.0f} | {peak:.0f} | {after:.0f} | {what} | {secs:.0f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", nargs="*", default=list(WORST), choices=list(WORST))
    ap.add_argument("--timeout-s", type=float, default=180.0)
    ap.add_argument("--visitors", type=int, default=VISITORS)
    ap.add_argument("--idle-s", type=float, default=IDLE_S)
    ap.add_argument("--llm", action="store_true", help="the real model's loads instead")
    args = ap.parse_args(argv)
    srv = start_server()
    sampler = Sampler(srv.pid)
    if args.llm:
        try:
            print_llm(llm_phases(srv, sampler))
        finally:
            sampler.stop()
            srv.stop()
        return 0
    from playwright.sync_api import sync_playwright

    rows, left = [], []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                         headless=True)
            for name in args.pages:
                path, button = WORST[name]
                before, peak, after, secs = measure(browser, srv.url + path, button, sampler,
                                                    args.timeout_s * 1000)
                rows.append((name, path, before, peak, after, secs))
                print(f"{name:<13} {peak:7.0f} MB peak  ({secs:.1f} s)", file=sys.stderr)
            if args.visitors:
                left = visitors(browser, srv.url, sampler, args.visitors, args.idle_s,
                                args.timeout_s * 1000)
            browser.close()
    finally:
        sampler.stop()
        srv.stop()
    print("| page | most expensive request | RSS before (MB) | peak (MB) | after (MB) "
          "| seconds |\n| --- | --- | ---: | ---: | ---: | ---: |")
    for name, path, before, peak, after, secs in rows:
        print(f"| {name} | `{path}` | {before:.0f} | {peak:.0f} | {after:.0f} | {secs:.1f} |")
    if left:
        print("\n| what closed sessions leave | RSS (MB) |\n| --- | ---: |")
        for moment, mb in left:
            print(f"| {moment} | {mb:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
