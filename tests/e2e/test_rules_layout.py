"""/rules in a real browser: the gallery chart leads (it starts on the first screen, in
presenter mode at 1920x1080 and 1280x720, on a 1440x900 laptop and on a 390 px phone), and
none of its text overlaps: the rules' labels, the two lines' notes, the legend, the axes'
titles and ticks (bounding boxes of the drawn SVG text), nor a label a marker."""

from __future__ import annotations

import pytest
from harness import IDLE, SETTLED_JS
from playwright.sync_api import Page

VIEWS = {"present_1920": ("/rules?present=1", 1920, 1080),
         "present_1280": ("/rules?present=1", 1280, 720),
         "laptop_1440": ("/rules", 1440, 900),
         "phone_390": ("/rules", 390, 844)}  # the chart keeps its width and scrolls sideways
# Every text's box in the gallery chart, tagged: label (a rule's name or a line's note,
# drawn as an annotation or as text on a point), legend, axis; and the markers' boxes.
BOXES_JS = """() => {
  const plot = document.querySelector('[data-testid=stMain] .js-plotly-plot');
  const box = (el) => { const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom]; };
  const out = [];
  const add = (sel, kind) => { for (const el of plot.querySelectorAll(sel)) {
    const t = (el.textContent || '').trim(); const b = box(el);
    if ((kind === 'marker' || t) && b[2] > b[0]) out.push([kind, t, ...b]); } };
  add('.annotation-text-g text', 'label');
  add('.scatterlayer .textpoint text', 'label');
  add('.legendtext', 'legend');
  add('.xtitle, .ytitle, .xtick text, .ytick text, .gtitle', 'axis');
  add('.scatterlayer .points path.point', 'marker');
  const top = plot.getBoundingClientRect().top;
  return {boxes: out, top: top};
}"""
SLACK = 1.0  # px: boxes that only touch do not overlap


def overlap(a, b) -> bool:
    return (a[2] < b[4] - SLACK and b[2] < a[4] - SLACK
            and a[3] < b[5] - SLACK and b[3] < a[5] - SLACK)


@pytest.mark.parametrize("view", list(VIEWS))
def test_the_gallery_leads_and_no_labels_overlap(server, tabs, view):
    path, w, h = VIEWS[view]
    page: Page = tabs.open(w, h, timeout_ms=90_000)
    page.goto(server.url + path)
    page.locator("[data-testid=stMain] .js-plotly-plot").first.wait_for(timeout=120_000)
    page.wait_for_selector(IDLE, state="attached", timeout=120_000)
    page.wait_for_function(SETTLED_JS, timeout=60_000)
    page.wait_for_timeout(500)
    got = page.evaluate(BOXES_JS)
    boxes = got["boxes"]
    labels = [b for b in boxes if b[0] == "label"]
    assert len(labels) >= 20, len(labels)
    bad = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if "label" not in (a[0], b[0]) or (a[0] == b[0] == "marker"):
                continue
            if overlap(a, b):
                bad.append((a[:2], b[:2]))
    assert not bad, bad
    assert got["top"] < 0.5 * h, f"the gallery starts at {got['top']:.0f} px of {h}"
