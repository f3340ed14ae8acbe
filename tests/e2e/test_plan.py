"""/plan in a real browser: paste a metrics file, pick a preset, read the verdict; screenshots."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import expect

FX = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
SHOTS = os.environ.get("SPECVIZ_SHOTS")  # a folder: screenshots are written there when set


def test_plan_paste_and_preset(server, page):
    page.goto(f"{server.url}/plan")
    page.get_by_text("does a draft model pay").wait_for()
    page.get_by_text("use k = 3").first.wait_for()  # the shipped example's verdict
    box = page.get_by_label("paste metrics", exact=False)
    box.fill((FX / "vllm_iid.prom").read_text())
    box.press("Control+Enter")
    page.get_by_text("100,000 rounds of k = 5").first.wait_for()
    page.get_by_text("consistent with position independence").first.wait_for()
    # the paste travels in the link, compressed; the URL is rewritten at the run's end
    expect(page).to_have_url(re.compile(r"[?&]plan_metrics=[^&]+"), timeout=60_000)
    q = dict(parse_qsl(urlsplit(page.url).query))
    assert q.get("plan_metrics")
    # the chart's drawn title (its text copy above the chart shows on phones only)
    page.get_by_text("Latency against throughput").locator("visible=true").first.wait_for()
    if SHOTS:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.screenshot(path=f"{SHOTS}/plan-1440.png", full_page=False)
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(1500)
        page.screenshot(path=f"{SHOTS}/plan-390.png", full_page=False)


def test_plan_bad_paste_is_a_message(server, page):
    page.goto(f"{server.url}/plan")
    box = page.get_by_label("paste metrics", exact=False)
    box.fill((FX / "not_prometheus.txt").read_text())
    box.press("Control+Enter")
    page.get_by_text("not Prometheus exposition text").first.wait_for()
    assert page.get_by_text("Traceback").count() == 0


def test_plan_sglang_server_info_is_read_as_an_average(server, page):
    page.goto(f"{server.url}/plan")
    page.get_by_text("use k = 3").first.wait_for()
    box = page.get_by_label("paste metrics", exact=False)
    box.fill((FX / "sglang_server_info.json").read_text())
    box.press("Control+Enter")
    page.get_by_text("An average from SGLang /get_server_info").first.wait_for()
    page.get_by_text("no interval: an average").first.wait_for()
    assert page.get_by_text("Traceback").count() == 0


def test_plan_tensor_parallel_from_a_link(server, page):
    """A link that splits a 70B target 4 ways: the decision names the split, the reasons say
    where each model runs and what the collectives cost; the controls show the link's values;
    screenshots at 1440x900 and 390 px (SPECVIZ_SHOTS)."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{server.url}/plan?plan_target=Llama-3.1-70B&plan_tp=4&plan_devices=4")
    decision = page.get_by_text("on 4 x H100 SXM (tensor parallelism 4)").first
    decision.wait_for()
    page.get_by_text("all-reduces", exact=False).first.wait_for()
    expect(page.get_by_label("tensor parallelism (target)")).to_have_value("4")
    assert page.get_by_text("Traceback").count() == 0
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/plan-tp-1440.png", full_page=False)
        page.get_by_text("Fixed costs assumed", exact=False).first.scroll_into_view_if_needed()
        page.screenshot(path=f"{SHOTS}/plan-tp-verdict-1440.png", full_page=False)
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(1500)
        decision.scroll_into_view_if_needed()
        page.screenshot(path=f"{SHOTS}/plan-tp-390.png", full_page=False)
    bad = f"{server.url}/plan?plan_tp=8&plan_devices=4"
    page.goto(bad)
    page.get_by_text("tensor parallelism 8 needs 8 devices").first.wait_for()
