"""Load: many concurrent browser sessions against one specviz server (a benchmark, not a test).

    .venv/bin/python benchmarks/load.py                 # 20 sessions, the defaults below
    .venv/bin/python benchmarks/load.py --sessions 30 --steps 20

It starts one server with the Docker image's entry command (tests/e2e/harness.py; localhost
only), opens one Debian chromium, and runs N sessions at once, each its own browser context:
on /round it steps through rounds (next, and "new round" every fifth step), then it opens
/exactness with its own seed and runs n decodes under every rule, then runs it again at 2n
through the n input. Each interaction is timed from the click (or key) to the page showing
its result with the script finished. A monitor, in its own process, polls the health
endpoint (a probe fails without a 200 within --health-timeout-s, 10 s as the probes in
deploy/) and the server's memory throughout, and lists the probes that took over 1 s.
It prints p50 / p95 / max interaction latency, errors (must be 0), health failures (must
be 0) and the server's peak resident memory (VmHWM), and exits non-zero when errors or
health failures occur. Every loop is bounded and the run stops by itself
(--max-seconds). On a small machine the browsers are the heavy part (see the CPU line), so
they run at a lower priority (--browser-nice) than the server, as if on the viewers' own
machines; the latencies still include their rendering.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    SETTLED_JS,
    health,
    peak_rss_mb,
    start_server,
)

CAPTION_RE = re.compile(r"Round (\d+) · step (\d+) of (\d+)")
BAD_TEXT = ("Traceback", "This app has encountered an error", "Page not found")


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=dict)  # kind -> seconds
    errors: list[str] = field(default_factory=list)

    def add(self, kind: str, seconds: float) -> None:
        self.latencies.setdefault(kind, []).append(seconds)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _watch(url: str, pid: int, period_s: float, timeout_s: float, stop, out) -> None:
    """The monitor's loop, in its own process so that the browsers' driver in this one
    cannot delay a probe: health and RSS every period_s until stop is set."""
    probes = failures = 0
    worst = peak = 0.0
    slow: list[tuple[float, float]] = []  # (seconds into the run, probe seconds) over 1 s
    start = time.perf_counter()
    while not stop.is_set():
        t0 = time.perf_counter()
        ok = health(url, timeout=timeout_s)
        dt = time.perf_counter() - t0
        worst = max(worst, dt)
        if dt > 1.0 or not ok:
            slow.append((round(t0 - start, 1), round(dt, 2)))
        probes += 1
        failures += not ok
        peak = max(peak, _rss_mb(pid))
        stop.wait(period_s)
    out.put({"probes": probes, "failures": failures, "worst_health_s": worst,
             "peak_rss_mb": peak, "slow": slow})


class Monitor:
    """Polls /_stcore/health and the server's RSS from a separate process until stopped."""

    def __init__(self, url: str, pid: int, timeout_s: float, period_s: float = 0.25):
        ctx = multiprocessing.get_context("fork")
        self.pid = pid
        self._stop, self._out = ctx.Event(), ctx.Queue()
        self._proc = ctx.Process(target=_watch, daemon=True,
                                 args=(url, pid, period_s, timeout_s, self._stop, self._out))
        self.probes = self.failures = 0
        self.worst_health_s = self.peak_rss_mb = 0.0
        self.slow: list[tuple[float, float]] = []

    def rss_mb(self) -> float:
        return _rss_mb(self.pid)

    def start(self) -> None:
        self._proc.start()

    def stop(self) -> None:
        if self._proc.pid is None or not self._proc.is_alive() and self._out.empty():
            return
        self._stop.set()
        result = self._out.get(timeout=30)
        self._proc.join(timeout=30)
        self.probes, self.failures = result["probes"], result["failures"]
        self.worst_health_s, self.peak_rss_mb = result["worst_health_s"], result["peak_rss_mb"]
        self.slow = result["slow"]


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time used so far: by process pid (user + system), or by the whole machine."""
    tick = os.sysconf("SC_CLK_TCK")
    if pid is not None:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    cpu = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(cpu) - cpu[3] - cpu[4]) / tick  # all but idle and iowait


async def settle(page, timeout_ms: float) -> None:
    await page.wait_for_selector(IDLE, state="attached", timeout=timeout_ms)
    await page.wait_for_function(SETTLED_JS, timeout=timeout_ms)


async def caption(page) -> str:
    return await page.get_by_text(CAPTION_RE).first.inner_text()


async def assert_clean(page) -> None:
    if await page.locator("[data-testid='stException']").count():
        raise AssertionError("an exception is shown")
    text = await page.locator("body").inner_text()
    for bad in BAD_TEXT:
        if bad in text:
            raise AssertionError(f"the page shows {bad!r}")


async def session(browser, i: int, base: str, args, res: Results) -> None:
    from playwright.async_api import expect

    timeout = args.timeout_s * 1000
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(timeout)
    page = await ctx.new_page()
    page.on("pageerror", lambda exc: res.errors.append(f"session {i}: page error {exc}"))
    try:
        t0 = time.perf_counter()
        await page.goto(f"{base}/round?k={args.k}&seed={i}")
        await page.get_by_text(CAPTION_RE).first.wait_for()
        await settle(page, timeout)
        res.add("first render /round", time.perf_counter() - t0)
        for step in range(args.steps):
            before = await caption(page)
            name = "new round" if step % 5 == 4 else "next"
            button = page.get_by_role("button", name=re.compile(rf"^{name}"))
            t0 = time.perf_counter()
            await button.click()
            await expect(page.get_by_text(CAPTION_RE).first).not_to_have_text(before,
                                                                           timeout=timeout)
            await settle(page, timeout)
            res.add(f"/round {name}", time.perf_counter() - t0)
            if args.think_s:
                await asyncio.sleep(args.think_s)  # a viewer reading the frame
        await assert_clean(page)

        t0 = time.perf_counter()
        await page.goto(f"{base}/exactness?n={args.n}&seed={i}&k={args.k}")
        await page.get_by_text("TV against the sampling floor").first.wait_for()
        await settle(page, timeout)
        res.add(f"first render /exactness (n={args.n:,})", time.perf_counter() - t0)
        box = page.locator(".st-key-w_n input")
        t0 = time.perf_counter()
        await box.fill(str(2 * args.n))
        await box.press("Enter")
        await expect(page).to_have_url(re.compile(rf"[?&]n={2 * args.n}(&|$)"), timeout=timeout)
        await settle(page, timeout)
        res.add(f"/exactness run (n={2 * args.n:,})", time.perf_counter() - t0)
        await assert_clean(page)
    except Exception as exc:  # every failure is counted and reported
        res.errors.append(f"session {i}: {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        await ctx.close()


async def drive(base: str, args, res: Results) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            await asyncio.wait_for(
                asyncio.gather(*(session(browser, i, base, args, res)
                                 for i in range(args.sessions))),
                timeout=args.max_seconds)
        except TimeoutError:
            res.errors.append(f"the run passed --max-seconds={args.max_seconds} and was stopped")
        finally:
            await browser.close()


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[round(q) - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--steps", type=int, default=15, help="interactions per session on /round")
    ap.add_argument("--n", type=int, default=20_000, help="decodes per rule on /exactness")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--timeout-s", type=float, default=120.0, help="one wait, at most")
    ap.add_argument("--max-seconds", type=float, default=900.0, help="the whole run, at most")
    ap.add_argument("--health-timeout-s", type=float, default=10.0,
                    help="a probe fails without a 200 within this time (deploy/: timeoutSeconds)")
    ap.add_argument("--think-s", type=float, default=0.0,
                    help="pause between a session's interactions (0: click as soon as settled)")
    ap.add_argument("--browser-nice", type=int, default=19,
                    help="niceness of this driver and its browsers (the server and the monitor "
                         "keep theirs): on a small machine the browsers, which in a deployment "
                         "run on the viewers' machines, should not starve the server")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 2

    server = start_server()  # 127.0.0.1 and a free port
    monitor = Monitor(server.url, server.pid, args.health_timeout_s)
    res = Results()
    idle_rss = monitor.rss_mb()
    monitor.start()
    os.nice(args.browser_nice)  # from here on: this process and the browsers it launches
    t0 = time.perf_counter()
    cpu0, server_cpu0 = cpu_seconds(), cpu_seconds(server.pid)
    try:
        asyncio.run(drive(server.url, args, res))
        wall = time.perf_counter() - t0
        machine_cpu = cpu_seconds() - cpu0
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        monitor.stop()
        healthy_after = health(server.url)
        with urllib.request.urlopen(server.url + "/", timeout=10) as r:
            healthy_after &= r.status == 200
        hwm = peak_rss_mb(server.pid)
    finally:
        monitor.stop()
        server.stop()

    every = [x for xs in res.latencies.values() for x in xs]
    inter = [x for kind, xs in res.latencies.items() if not kind.startswith("first render")
             for x in xs]
    print(f"specviz load: {args.sessions} concurrent browser sessions against one server "
          f"({args.steps} /round interactions + 1 exactness run each), chromium at nice "
          f"{args.browser_nice}, think time {args.think_s:g} s, {os.cpu_count()} cores, "
          f"{wall:.1f} s wall")
    print(f"{'kind':<34}{'count':>7}{'p50 s':>9}{'p95 s':>9}{'max s':>9}")
    for kind, xs in res.latencies.items():
        print(f"{kind:<34}{len(xs):>7}{percentile(xs, 50):>9.3f}{percentile(xs, 95):>9.3f}"
              f"{max(xs):>9.3f}")
    if inter:
        print(f"{'all interactions':<34}{len(inter):>7}{percentile(inter, 50):>9.3f}"
              f"{percentile(inter, 95):>9.3f}{max(inter):>9.3f}")
    print(f"timed events: {len(every)}")
    print(f"errors: {len(res.errors)}")
    for e in res.errors[:20]:
        print(f"  {e}")
    print(f"health: {monitor.probes} probes during the run, {monitor.failures} failed "
          f"(no 200 within {args.health_timeout_s:g} s), "
          f"slowest {monitor.worst_health_s:.3f} s; healthy after the run: {healthy_after}")
    if monitor.slow:
        print(f"  probes over 1 s (s into the run, s taken): {monitor.slow[:12]}"
              + (" ..." if len(monitor.slow) > 12 else ""))
    print(f"server memory: {idle_rss:.0f} MB resident at start, peak {hwm:.0f} MB (VmHWM), "
          f"highest polled RSS {monitor.peak_rss_mb:.0f} MB")
    print(f"CPU: server {server_cpu:.0f} s, whole machine {machine_cpu:.0f} s busy "
          f"({os.cpu_count()} cores x {wall:.0f} s wall = {os.cpu_count() * wall:.0f} s); the rest "
          "is the browsers and anything else running")
    if every:
        print(f"server CPU per timed event: {server_cpu / len(every) * 1000:.0f} ms "
              f"({len(every)} events: page loads, clicks and exactness runs)")
    ok = not res.errors and monitor.failures == 0 and healthy_after
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
