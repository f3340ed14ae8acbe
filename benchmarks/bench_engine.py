"""Speed of the specviz engines: the vectorised Monte Carlo against the one scalar round.

    .venv/bin/python benchmarks/bench_engine.py            # everything (~40 s on 2 cores)
    .venv/bin/python benchmarks/bench_engine.py --quick    # skip the n = 10^8 memory run

Every figure, and every ratio, is measured in this one run on this machine. Times are the
process's CPU time (time.process_time), which other load on the machine disturbs less than
wall time; the wall time of each run is printed beside it. The per-round loop is the one
scalar round of specviz.core.round, played decode by decode.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz import (  # noqa: E402
    Scenario,
    default_tables,
    exact_joint,
    simulate,
    target_joint,
    tv,
    tv_threshold,
)
from specviz.core.draws import RngDraws  # noqa: E402
from specviz.core.pair import TablePair  # noqa: E402
from specviz.core.round import play  # noqa: E402
from specviz.core.rules import get_rule  # noqa: E402

MEMORY_CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
from specviz import Scenario, default_tables, simulate
t = default_tables()
t0 = time.perf_counter()
r = simulate(Scenario.of(t.P, t.Q, ctx=0, k=4), n={n}, n_tokens=2)
hwm = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]  # kB, this process
print(time.perf_counter() - t0, int(r.joint.sum()), hwm)
"""


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Smallest CPU time of `repeat` calls (seconds), and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu = time.process_time() - t0
        if cpu < best:
            best, best_of.wall = cpu, time.perf_counter() - w0
    return best, out


def loop_simulate(P, Q, ctx: int, k: int, n: int, n_tokens: int = 2, seed: int = 0):
    """The per-round loop: n decodes by the scalar round, each until n_tokens are out."""
    pair, rule = TablePair(P, Q), get_rule("correct")
    draws = RngDraws(np.random.default_rng(seed))
    joint = np.zeros((pair.V,) * n_tokens, dtype=np.int64)
    for _ in range(n):
        got: list[int] = []
        while len(got) < n_tokens:
            got += play(pair, [ctx] + got, k, rule, draws, light=True).tokens
        joint[tuple(got[:n_tokens])] += 1
    return joint


def report(name: str, value: str, target: str, ok: bool) -> bool:
    print(f"  {name:<52} {value:>14}   target {target:<12} {'PASS' if ok else 'MISS'}",
          flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the n = 10^8 memory run")
    ap.add_argument("--loop-n", type=int, default=20_000,
                    help="decodes timed in the Python loop reference (default 20,000)")
    args = ap.parse_args(argv)

    print(f"specviz engine benchmark: Python {platform.python_version()}, NumPy "
          f"{np.__version__}, {os.cpu_count()} CPUs, {platform.machine()}")
    t = default_tables()
    P, Q = t.P, t.Q
    results = []

    # 4. memory bounded at any n: simulate at n = 10^8 in a child process. It runs FIRST:
    # Linux carries a process's peak RSS across fork and exec, so a child started from a
    # parent that has grown would report the parent's peak as its own.
    memory: list[str] = []
    if not args.quick:
        child = MEMORY_CHILD.format(root=str(ROOT), n=100_000_000)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                             check=True).stdout.split()
        wall = time.perf_counter() - t0
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB
        memory = [f"{rss_mb:.0f} MB", f"{int(out[2]) / 1024:.0f} MB", out[0], out[1], f"{wall:.1f}"]

    # 1. simulate at V = 6, k = 4, n_tokens = 2, n = 10^6, against the per-round loop
    n = 1_000_000
    simulate(Scenario.of(P, Q, ctx=0), n=10_000)  # warm up (imports, allocator)
    sim_s, sim = best_of(lambda: simulate(Scenario.of(P, Q, ctx=0, seed=1), n=n, n_tokens=2), 5)
    sim_wall = best_of.wall
    loop_s, loop_joint = best_of(lambda: loop_simulate(P, Q, 0, 4, args.loop_n, 2, seed=2), 1)
    per_sim, per_loop = sim_s / n, loop_s / args.loop_n
    target = target_joint(P, 0, n_tokens=2)
    print("\n1. simulate, default tables, V=6, k=4, n_tokens=2, correct rule, n=10^6")
    rate = n / sim_s
    results.append(report(f"simulate n=10^6, best of 5 ({sim_s:.3f} s CPU, {sim_wall:.3f} s "
                          "wall)", f"{rate / 1e6:.2f} M/s", ">= 10 M/s", rate >= 10e6))
    print(f"  {'scalar round loop, ' + f'{args.loop_n:,} decodes':<52} {loop_s:>12.2f} s   "
          f"({per_loop * 1e6:.1f} us/decode vs {per_sim * 1e6:.3f} us/decode)")
    speedup = per_loop / per_sim
    results.append(report("speedup over the loop (per decode)", f"{speedup:,.0f}x", ">= 300x",
                          speedup >= 300))
    # both are samplers of the target law: check they agree with it (not a timed figure)
    for what, joint, m in (("simulate", sim.joint, n), ("loop", loop_joint, args.loop_n)):
        d, line = tv(joint / m, target), tv_threshold(target, m)
        print(f"  check: TV({what}, target) = {d:.4f} <= threshold {line:.4f}: "
              f"{'ok' if d <= line else 'FAILED'}")

    # 2. random V = 1000 tables, k = 8, broken rules, n = 10^6
    V, k = 1000, 8
    rng = np.random.default_rng(1000)
    PV = rng.dirichlet(np.ones(V), size=V)  # (V, V)
    QV = rng.dirichlet(np.ones(V), size=V)  # (V, V)
    print(f"\n2. random Dirichlet tables, V={V}, k={k}, n_tokens=2, n=10^6 (end to end, "
          "including the engine's set-up)")
    for rule in ("no_resample", "greedy"):
        s, r = best_of(lambda rule=rule: simulate(
            Scenario.of(PV, QV, ctx=0, k=k, rule=rule, seed=3), n=n, n_tokens=2), 2)
        rate = n / s
        results.append(report(f"{rule}: decodes/s (best of 2, {s:.2f} s CPU, "
                              f"{best_of.wall:.2f} s wall)", f"{rate / 1e6:.2f} M/s",
                              ">= 1.5 M/s", rate >= 1.5e6))
        setup, _ = best_of(lambda rule=rule: simulate(
            Scenario.of(PV, QV, ctx=0, k=k, rule=rule, seed=3), n=1, n_tokens=2), 2)
        print(f"    of which set-up (simulate at n=1): {setup:.2f} s; without it "
              f"{n / (s - setup) / 1e6:.2f} M decodes/s; {r.tokens_per_call:.3f} tokens/call")

    # 3. exact_joint at V = 6, k = 4, n_tokens = 2
    print("\n3. exact_joint, default tables, V=6, k=4, n_tokens=2")
    ex_s, ex = best_of(lambda: exact_joint(Scenario.of(P, Q, ctx=0), n_tokens=2), 20)
    results.append(report("exact_joint, best of 20", f"{ex_s * 1e3:.2f} ms", "<= 50 ms",
                          ex_s <= 0.050))
    print(f"  check: max |exact_joint - target_joint| = {np.abs(ex - target).max():.1e}")

    print("\n4. memory: simulate at n=10^8 (V=6, k=4) in a child process (run first)")
    if args.quick:
        print("  skipped (--quick)")
    else:
        rss, hwm, secs, count, wall = memory
        rss_mb = float(rss.split()[0])
        results.append(report("peak RSS of the child (RUSAGE_CHILDREN)", rss, "< 500 MB",
                              rss_mb < 500))
        print(f"    (the child's own VmHWM: {hwm})")
        print(f"  {'simulate n=10^8 time (whole process: ' + wall + ' s)':<52} "
              f"{float(secs):>12.1f} s   ({int(count):,} decodes counted)")

    print(f"\n{sum(results)} of {len(results)} targets met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
