"""A token-tree round in a real browser: a deep link opens /round under a tree rule, and
stepping with the arrow keys reveals the tree level by level, the one target call, the
siblings' coins one by one, the kept path and, at the end, the pruned branches."""

from __future__ import annotations

from playwright.sync_api import expect
from test_browser import CAPTION_RE, assert_clean, open_page, round_caption, settle, url_param

TREE = "/round?k=3&seed=5&rule=tree_iid&step=0"


def _nodes(page, status: str | None = None):
    sel = ".sv-tree .sv-node" + (f"[data-status='{status}']" if status else "")
    return page.locator(sel)


def test_a_tree_round_steps_from_drafts_to_the_pruned_branches(server, page):
    open_page(page, server.url + TREE, CAPTION_RE)
    expect(round_caption(page)).to_contain_text("step 0 ·")
    assert _nodes(page).count() == 0  # nothing drafted yet
    page.keyboard.press("ArrowRight")  # level 1: the three first candidates
    expect(page).to_have_url(url_param("step", "1"))
    settle(page)
    expect(_nodes(page)).to_have_count(3)
    for step in range(2, 5):  # levels 2 and 3, then the target's one call over all nodes
        page.keyboard.press("ArrowRight")
        expect(page).to_have_url(url_param("step", str(step)))
        settle(page)
    expect(_nodes(page)).to_have_count(15)
    assert _nodes(page, "accepted").count() + _nodes(page, "rejected").count() == 0
    page.keyboard.press("ArrowRight")  # the first sibling's coin
    expect(page).to_have_url(url_param("step", "5"))
    settle(page)
    expect(_nodes(page, "accepted").or_(_nodes(page, "rejected"))).to_have_count(1)
    step = 5
    while "· done ·" not in round_caption(page).inner_text():  # on to the round's last frame
        step += 1
        assert step < 40, "no last frame"
        page.keyboard.press("ArrowRight")
        expect(page).to_have_url(url_param("step", str(step)))
        settle(page)
    assert _nodes(page, "flushed").count() > 0  # the branches off the kept path
    expect(page.locator(".sv-tree [data-status='bonus'], .sv-tree [data-status='resampled']")
           ).to_have_count(1)
    assert_clean(page)
