"""What users send a real server: fast keys, Markdown in a prompt, heavy runs side by side,
hostile uploads one after another, and SIGTERM during a heavy run.

Servers that are measured (memory, exit time) are started for the test alone.
"""

from __future__ import annotations

import json
import random
import re
import signal
import string
import threading
import time
from pathlib import Path

import pytest
from harness import Server, health, start_server
from playwright.sync_api import Page, expect
from test_browser import (
    CAPTION_RE,
    assert_clean,
    caption_numbers,
    open_page,
    round_caption,
    settle,
)

RSS_BOUND_MB = 1024  # what the server may reach while taking the hostile uploads below
EXIT_BOUND_S = 10.0  # Docker's and Kubernetes' default grace period
RUNNING = "[data-testid='stApp'][data-test-script-state='running']"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


# ----------------------------------------------------------------------------- keys
def test_fast_arrow_presses_are_each_one_step(server, page):
    """50 presses within 0.8 s once moved the round 2 steps: now each press is one step
    (up to the queue's length), and the caption and the URL agree. The first ten arrive in
    one task of the page's own (as fast as presses can come, however loaded the machine)."""
    open_page(page, server.url + "/round?k=32&seed=3", CAPTION_RE)
    page.evaluate("() => { for (let i = 0; i < 10; i++) document.body.dispatchEvent("
                  "new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true})); }")
    expect(round_caption(page)).to_contain_text("step 10 ·", timeout=60_000)
    page.wait_for_timeout(1_000)
    settle(page)
    assert caption_numbers(page)[1] == 10
    for _ in range(50):
        page.keyboard.press("ArrowRight")
    page.wait_for_timeout(500)
    page.wait_for_function(
        "() => !window.__svSteps.queue.length && !window.__svSteps.waiting", timeout=90_000)
    settle(page)
    step = caption_numbers(page)[1]
    assert 10 + 12 <= step <= 10 + 50, step
    assert f"step={step}" in page.url
    assert_clean(page)


# ----------------------------------------------------------------------------- markdown
def test_markdown_in_a_prompt_does_not_render(server, tabs):
    """/text?prompt=![](//host/i1) once fetched an image from any host into a caption."""
    payload = ("Return ![](//127.0.0.1:9/i1) [Sign in](//evil.example/login) "
               "$$\\begin{matrix}x\\end{matrix}$$ <img src=//127.0.0.1:9/i2>")
    fetched = []
    page = tabs.open(fresh=True)  # its listener goes with it
    page.on("request", lambda r: fetched.append(r.url) if r.url.startswith("http://127.0.0.1:9/")
            else None)
    page.goto(server.url + "/text?" + f"prompt={payload}".replace(" ", "%20"))
    page.get_by_text("Round 0 starts after").first.wait_for(timeout=90_000)
    settle(page)
    assert page.locator("img[src*='i1'], img[src*='i2']").count() == 0
    assert page.locator("a[href*='evil.example']").count() == 0
    cap = page.locator("[data-testid='stCaptionContainer'], [data-testid='stAlert']")
    assert cap.locator(".katex").count() == 0
    assert page.get_by_text("[Sign in](//evil.example/login)").count() >= 1  # shown as text
    assert not fetched, fetched


HOSTILE = ("www.evil.example", ":smile:", ":material/home:", ":red[red]",
           ":blue-background[b]", "me@evil.example", "https://evil.example/x")
NAMES = (" ".join(HOSTILE[:4]), " ".join(HOSTILE[4:]))  # each short enough to be repeated
JOINER = "\u2060"  # the invisible word joiner guard.plain puts inside such patterns


def _nothing_interpreted(page: Page, boxes: str) -> None:
    """The boxes show HOSTILE as typed: no link, icon, emoji or coloured span."""
    box = page.locator(boxes).filter(has_text="evil")
    box.first.wait_for(timeout=90_000)
    assert box.locator("a").count() == 0
    assert box.locator("[data-testid='stIconMaterial'], [style*='color']").count() == 0
    text = " ".join(box.all_inner_texts()).replace(JOINER, "")
    for literal in HOSTILE:
        assert literal in text, (literal, text)
    assert "\U0001F604" not in text  # the smile emoji
    assert page.locator("a[href*='evil.example']").count() == 0


def test_user_names_are_shown_as_typed(server, page):
    """A file name, a model_name label or a config's _name_or_path such as 'Sign in at
    www.evil.example' became a link (or an emoji, icon, colour) on the app's own origin."""
    from specviz.web.urlcodec import encode_blob

    open_page(page, server.url + "/text", "Real text: speculative decoding")
    page.locator(".st-key-text_source").get_by_text("upload").click()
    page.locator(".st-key-text_upload input[type=file]").set_input_files(
        {"name": "Sign in at " + " ".join(NAMES) + ".txt", "mimeType": "text/plain",
         "buffer": ("The quick brown fox jumps over the lazy dog. " * 40).encode()})
    page.wait_for_timeout(500)
    settle(page, timeout=120_000)
    _nothing_interpreted(page, "[data-testid='stCaptionContainer']")
    metrics = "".join(f'vllm:spec_decode_num_drafts_total{{model_name="{name}"}} 5\n'
                      for name in NAMES)
    page.goto(server.url + "/plan?plan_metrics=" + encode_blob(metrics))
    _nothing_interpreted(page, "[data-testid='stAlert']")
    target, draft = (encode_blob(json.dumps({"_name_or_path": name, "num_hidden_layers": 2}))
                     for name in NAMES)
    page.goto(server.url + f"/plan?plan_target_cfg={target}&plan_draft_cfg={draft}")
    _nothing_interpreted(page, "[data-testid='stAlert']")


# ----------------------------------------------------------------------------- workers
HEAVY_N = 1_000_000  # a run of seconds, however fast the machine: far past the second over
# which the four pages ask (3,000,000 made the test 80 s on two loaded cores)
# Set once the page's text has held the wait note, however briefly: the note lasts only while
# a run waits, and a browser busy with four pages may not answer a poll for seconds.
SAW_WAIT_JS = """(() => { window.__svWaited = false;
  new MutationObserver(() => { if (!window.__svWaited && document.body
      && document.body.innerText.includes('Waiting for a free worker')) window.__svWaited = true; })
    .observe(document, {subtree: true, childList: true, characterData: true}); })()"""


def test_heavy_runs_wait_for_a_free_worker(browser):
    """20 sessions at n = 10^6 on /exactness peaked at 2.33 GB: heavy runs now take one of
    two workers, and the rest say they wait. Four open pages ask for n = HEAVY_N within
    a second of each other (a page load would spread them over seconds), so at least one
    of them waits."""
    srv = start_server()
    try:
        ctx = browser.new_context(viewport={"width": 1200, "height": 900})
        ctx.set_default_timeout(120_000)
        ctx.add_init_script(SAW_WAIT_JS)
        pages = [ctx.new_page() for _ in range(4)]
        for i, p in enumerate(pages):
            open_page(p, srv.url + f"/exactness?n=1000&k=2&seed={i}",
                      "TV against the sampling floor")
            p.evaluate("window.__svWaited = false")
        boxes = [p.get_by_label("n: decodes per rule", exact=True) for p in pages]
        for box in boxes:
            box.fill(str(HEAVY_N))
        for box in boxes:
            box.press("Enter")
        for p in pages:
            p.wait_for_function(f"() => location.search.includes('n={HEAVY_N}')")
            settle(p, timeout=180_000)
            assert_clean(p)
        waited = [p.evaluate("window.__svWaited") for p in pages]
        assert any(waited), "no page said it was waiting"
        assert not all(waited), "every page waited: no run held a worker"
        print(f"4 heavy sessions: peak {rss_mb(srv.pid, 'VmHWM'):.0f} MB, waited {waited}")
        ctx.close()
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- uploads
def _random_unicode(path: Path, seed: int, size: int = 4_900_000) -> Path:
    rng = random.Random(seed)
    chars, n = [], 0
    while n < size:
        c = chr(rng.randint(0x100, 0x2FFF))
        if c.isprintable():
            chars.append(c)
            n += len(c.encode())
    path.write_text("".join(chars)[: size // 3], encoding="utf-8")
    return path


def _five_words(path: Path) -> Path:
    path.write_text(" ".join(ch * 900_000 for ch in "abcde"), encoding="utf-8")
    return path


def _many_words(path: Path, n: int = 50_000) -> Path:
    rng = random.Random(1)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(n)]
    path.write_text(" ".join(words * 3), encoding="utf-8")
    return path


def _upload(page: Page, path: Path) -> None:
    page.locator(".st-key-text_upload input[type=file]").set_input_files(str(path))
    page.wait_for_timeout(500)
    settle(page, timeout=180_000)


class Peak:
    """The server's largest RSS, sampled every 50 ms while the block runs."""

    def __init__(self, srv: Server) -> None:
        self.pid, self.mb, self._stop = srv.pid, 0.0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.mb = max(self.mb, rss_mb(self.pid))
            time.sleep(0.05)

    def __enter__(self) -> Peak:
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def _choose_upload(page: Page, url: str) -> None:
    open_page(page, url, "Real text: speculative decoding")
    page.locator(".st-key-text_source").get_by_text("upload").click()
    page.locator(".st-key-text_upload input[type=file]").wait_for(state="attached")
    settle(page)


def test_hostile_uploads_in_a_row_stay_under_the_bound(browser, tmp_path):
    """Each 5 MB upload of random Unicode at order 8 once kept 500-630 MB; five 1 MB words
    took 1.1-1.35 GB; each new round on 50,000 words 55 MB. Now: RSS < RSS_BOUND_MB."""
    srv = start_server()
    files = [_random_unicode(tmp_path / f"u{i}.txt", i) for i in range(3)]
    words, many = _five_words(tmp_path / "w.txt"), _many_words(tmp_path / "m.txt")
    try:
        ctx = browser.new_context(viewport={"width": 1200, "height": 900})
        ctx.set_default_timeout(180_000)
        page = ctx.new_page()
        with Peak(srv) as peak:
            _choose_upload(page, srv.url + "/text?order=8&k=32")
            for f in files + files:
                _upload(page, f)
                assert page.locator("[data-testid='stException']").count() == 0
                # the refusal's note may draw after the run settles: wait for it (expect)
                expect(page.get_by_text(re.compile("(File|Text) not used"))).to_have_count(
                    1, timeout=120_000)
            _choose_upload(page, srv.url + "/text?level=word&order=4&k=32")
            for _ in range(2):
                _upload(page, words)
                expect(page.get_by_text("cannot make a model")).to_have_count(1)
            _upload(page, many)
            assert page.get_by_text(re.compile("(File|Text) not used")).count() == 0
            for _ in range(4):
                page.get_by_role("button", name="new round").click()
                page.wait_for_timeout(300)
                settle(page, timeout=180_000)
            assert_clean(page)
        ctx.close()
        time.sleep(1)
        idle = rss_mb(srv.pid)
        print(f"hostile uploads: peak {peak.mb:.0f} MB, after {idle:.0f} MB")
        assert peak.mb < RSS_BOUND_MB, peak.mb
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- shutdown
@pytest.mark.parametrize("url", ["/exactness?n=10000000&k=1",
                                 "/rules?rules_n=2000000&k=32&multi_draft_m=8"])
def test_sigterm_during_a_heavy_run_exits_in_time(browser, url):
    """SIGTERM during a heavy run took 14.7 s to end: long loops now stop at once."""
    srv = start_server()
    try:
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(srv.url + url)
        page.wait_for_selector(RUNNING, state="attached", timeout=60_000)
        time.sleep(1.5)  # well inside the run
        assert srv.proc.poll() is None
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(timeout=60)
        took = time.monotonic() - t0
        print(f"{url}: exit {took:.1f} s after SIGTERM")
        assert took < EXIT_BOUND_S, took
        ctx.close()
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- freezes
FREEZE_BOUND_S = 3.0  # longest a health check may wait while /plan reads a hostile paste


def test_a_hostile_paste_does_not_freeze_the_server(server, page):
    """/plan with 'draft acceptance = ' and 20,000 digits held the GIL 14-53 s (every
    session and the health check stopped) while a pattern backtracked; the log reader now
    splits strings, refuses the line at its cap, and the server answers throughout."""
    from specviz.web import urlcodec

    text = "draft acceptance = " + "1" * 20_000 + "x accepted"
    longest, done = [0.0], threading.Event()

    def poll() -> None:
        while not done.is_set():
            t0 = time.monotonic()
            health(server.url, timeout=120)
            longest[0] = max(longest[0], time.monotonic() - t0)
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        page.goto(server.url + "/plan?plan_metrics=" + urlcodec.url_blob(text, "paste")[0])
        page.get_by_text("the cap is 4,096").first.wait_for(timeout=120_000)
    finally:
        done.set()
        poller.join(timeout=130)
    print(f"longest health check while /plan read the paste: {longest[0]:.2f} s")
    assert longest[0] < FREEZE_BOUND_S, longest[0]
