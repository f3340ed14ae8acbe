"""specviz in a real browser (Debian's chromium driven by Playwright) against a real server.

Every wait is on a condition: the app's own run state (the `data-test-script-state` and
`data-test-connection-state` attributes of stApp), lazy elements rendered (no stSkeleton),
no stale elements, and the text or URL an action must produce. The only timed wait is in
the autoplay test, to show that nothing moves once autoplay is off.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from harness import IDLE, ROOT, SETTLED_JS, Server, start_server
from playwright.sync_api import Page, expect

from specviz.views import site

# "Error" as an exception name or label, but not prose such as "Error bars: one standard error".
ERROR_RE = re.compile(r"\b(?:[A-Z]\w*)?(?:Error|Exception)\b(?! bars)")
CAPTION_RE = re.compile(r"Round (\d+) · step (\d+) ·")


# ----------------------------------------------------------------------------- helpers
def settle(page: Page, timeout: float = 60_000) -> None:
    """Wait until the script has finished, lazy elements are drawn and nothing is stale."""
    page.wait_for_selector(IDLE, state="attached", timeout=timeout)
    page.wait_for_function(SETTLED_JS, timeout=timeout)


def open_page(page: Page, url: str, expect_text: str | re.Pattern) -> None:
    page.goto(url)
    page.get_by_text(expect_text).first.wait_for()
    settle(page)


def assert_clean(page: Page) -> None:
    """No exception box, traceback, error alert or 'Page not found' anywhere on the page."""
    assert page.locator("[data-testid='stException']").count() == 0, "an exception is shown"
    assert page.locator("[data-testid='stAlertContentError']").count() == 0, (
        "an error alert is shown: "
        + " | ".join(page.locator("[data-testid='stAlertContentError']").all_inner_texts()))
    text = page.locator("body").inner_text()
    for bad in ("Traceback", "Page not found", "This app has encountered an error"):
        assert bad not in text, f"the page shows {bad!r}"
    hits = ERROR_RE.findall(text)
    assert not hits, f"the page shows error words {hits}"


def slider(page: Page, key: str):
    return page.locator(f".st-key-w_{key} [data-testid='stSliderThumbValue']")


def query(page: Page) -> dict[str, str]:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(page.url).query))


def url_param(name: str, value: str) -> re.Pattern:
    return re.compile(rf"[?&]{re.escape(name)}={re.escape(value)}(&|$)")


def round_caption(page: Page):
    return page.get_by_text(CAPTION_RE).first


def caption_numbers(page: Page) -> tuple[int, int, int]:
    m = CAPTION_RE.search(round_caption(page).inner_text())
    assert m, "no round caption"
    return int(m[1]), int(m[2]), 0


# ----------------------------------------------------------------------------- deep links
@dataclass(frozen=True)
class DeepLink:
    path: str  # with its query string
    title: str  # text the page must show
    sliders: dict[str, str]  # sidebar slider -> shown value
    texts: tuple[str, ...]  # content that depends on the parameters


DEEP_LINKS = [
    DeepLink("/?k=7&seed=3", "specviz: speculative decoding", {"k": "7"},
             ("at k = 7",)),
    DeepLink("/round?k=5&seed=3&step=2", "One round, token by token",
             {"k": "5", "round_scrub": "2"},
             ("step 2 ·", "k = 5")),
    DeepLink("/exactness?n=2000&k=3&seed=1", "Exactness: is the text distributed",
             {"k": "3"}, ("k = 3, seed = 1",)),
    DeepLink("/acceptance?k=6&c=0.3", "Acceptance: how draft quality", {"k": "6", "c": "0.30"},
             ("k = 6 and c = 0.3 from the sidebar",)),
    DeepLink("/draft-length?c=0.05", "Draft length k", {"c": "0.05"}, ("c = 0.05",)),
    DeepLink("/cost?k=7&c=0.2", "Cost: when a draft is too dear", {"k": "7", "c": "0.20"},
             ("tokens per call (exact, k = 7)", "speedup at c = 0.2")),
    DeepLink("/roofline?k=7&preset=Llama-2-13B&accel=A100+SXM+80GB", "Roofline: why scoring",
             {"k": "7"}, ("verify k + 1 = 8 tokens", "free tokens on A100 SXM 80GB")),
    DeepLink("/text?k=3&seed=2&step=1", "Real text: speculative decoding", {"k": "3"},
             ("step 1 ·",)),
    DeepLink("/rules?k=5&c=0.2", "The rules gallery", {"k": "5"},  # c: in the link only
             ("k = 5, seed 0",)),
    DeepLink("/tour?chapter=2&k=6", "A guided tour of speculative decoding", {},  # k: link
             ("3 · Acceptance",)),
]


@pytest.fixture
def cold_server() -> Iterator[Server]:
    """A fresh server that has served nothing yet."""
    srv = start_server()
    yield srv
    srv.stop()


def _check_deep_link(page: Page, base: str, link: DeepLink) -> None:
    open_page(page, base + link.path, link.title)
    for key, value in link.sliders.items():
        if key == "round_scrub":  # the page's own step slider
            thumb = page.locator(".st-key-round_scrub [data-testid='stSliderThumbValue']")
            expect(thumb).to_have_text(f"step {value}")
        else:
            expect(slider(page, key)).to_have_text(value)
    for text in link.texts:
        expect(page.get_by_text(text, exact=False).first).to_be_visible()
    path = link.path.split("?")[0]
    assert page.url.split("?")[0].rstrip("/").endswith(path.rstrip("/")), page.url
    assert_clean(page)


@pytest.mark.parametrize("link", DEEP_LINKS, ids=[d.path.split("?")[0] for d in DEEP_LINKS])
def test_cold_server_first_request_is_a_deep_link(cold_server, page, link):
    """The first request a new server ever gets is a deep link: that page, those values."""
    _check_deep_link(page, cold_server.url, link)
    # the URL keeps the shared parameters that differ from the defaults
    from urllib.parse import parse_qsl, urlsplit

    asked = dict(parse_qsl(urlsplit(link.path).query))
    for key in ("k", "c", "seed"):
        if key in asked:
            assert query(page).get(key) == asked[key], page.url


def test_extra_page_setting_in_the_url(server, page):
    """A page's own control (roofline: the model and accelerator) is seeded from the URL."""
    open_page(page, server.url + "/roofline?preset=Llama-2-70B&dtype=int8&accel=H200+SXM",
              "Roofline: why scoring")
    expect(page.locator(".st-key-w_preset input")).to_have_value("Llama-2-70B")
    expect(page.locator(".st-key-w_dtype input")).to_have_value("int8")
    expect(page.locator(".st-key-w_accel input")).to_have_value("H200 SXM")
    assert_clean(page)


def _visit_every_page_from_the_sidebar(page: Page, check) -> None:
    nav = page.locator(".st-key-sv_nav")
    for link in DEEP_LINKS[1:]:
        name = link.path.split("?")[0].strip("/")
        nav.get_by_role("link", name=site.BY_PATH[name].title, exact=True).click()
        expect(page).to_have_url(re.compile(rf"/{re.escape(name)}(\?|$)"))
        page.get_by_text(link.title).first.wait_for()
        settle(page)
        assert_clean(page)
        check(page)


def test_every_page_through_the_sidebar(server, page):
    """Home, then every page from the sidebar in one session: each renders cleanly."""
    open_page(page, server.url + "/", "specviz: speculative decoding")
    _visit_every_page_from_the_sidebar(page, lambda p: None)


def test_settings_survive_a_page_switch(server, page):
    """Open home with k=9, then visit every page from the sidebar: k stays 9 everywhere, in
    the link of every page and on the slider of each page that draws k (and c)."""
    from urllib.parse import urlsplit

    from specviz.web.settings import sidebar_keys

    open_page(page, server.url + "/?k=9", "specviz: speculative decoding")

    def k_is_9(p: Page) -> None:
        expect(p).to_have_url(url_param("k", "9"))
        drawn = sidebar_keys(urlsplit(p.url).path.strip("/"))
        if "k" in drawn:
            expect(slider(p, "k")).to_have_text("9")
        if "c" in drawn:
            expect(slider(p, "c")).to_have_text("0.10")

    _visit_every_page_from_the_sidebar(page, k_is_9)


def test_unknown_page_is_reported(server, page):
    """Positive control for assert_clean: an unknown path does show 'Page not found'."""
    page.goto(server.url + "/no-such-page")
    expect(page.get_by_text("Page not found").first).to_be_visible()


def test_hostile_url_falls_back_with_an_escaped_note(server, page):
    """Invalid values get a visible note and a safe value (the pure layer, specviz.settings,
    is the oracle for which); markup is never reflected."""
    from urllib.parse import parse_qs, urlencode

    from specviz.web.settings import parse_query

    params = {"k": "<script>alert(1)</script>", "c": "1e308", "seed": "-5",
              "rule": "<img src=x onerror=alert(1)>", "T": "nan"}
    expected, notes = parse_query(parse_qs(urlencode(params)))
    assert len(notes) == len(params)
    page.goto(server.url + "/?" + urlencode(params))  # home draws all five controls
    page.get_by_text("specviz: speculative decoding").first.wait_for()
    settle(page)
    shown = page.locator("[data-testid='stAlertContentWarning']")
    for key in params:
        expect(shown.filter(has_text=f"URL parameter {key}=")).to_have_count(1)
    expect(slider(page, "k")).to_have_text(str(expected.k))
    expect(slider(page, "c")).to_have_text(f"{expected.c:.2f}")
    expect(page.locator(".st-key-w_rule input")).to_have_value(expected.rule)
    html = page.content()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert page.locator("img[src='x']").count() == 0
    assert_clean(page)
    # the rewritten URL holds the values in use, not what arrived
    q = query(page)
    assert "rule" not in q and "T" not in q, page.url
    assert q.get("k", "4") == str(expected.k), page.url


# ----------------------------------------------------------------------------- /round
ROUND = "/round?k=5&seed=3&step=2"


def test_round_steps_with_the_arrow_keys(server, page):
    open_page(page, server.url + ROUND, CAPTION_RE)
    assert caption_numbers(page)[:2] == (0, 2)
    page.keyboard.press("ArrowRight")
    expect(round_caption(page)).to_contain_text("step 3 ·")
    expect(page).to_have_url(url_param("step", "3"))
    settle(page)
    page.keyboard.press("ArrowRight")
    expect(round_caption(page)).to_contain_text("step 4 ·")
    expect(page).to_have_url(url_param("step", "4"))
    settle(page)
    page.keyboard.press("ArrowLeft")
    expect(round_caption(page)).to_contain_text("step 3 ·")
    expect(page).to_have_url(url_param("step", "3"))
    settle(page)
    assert_clean(page)


def test_round_steps_with_the_buttons_and_replays(server, page, tabs):
    open_page(page, server.url + ROUND, CAPTION_RE)
    first_frame = page.locator(".sv-caption").first.inner_text()
    nxt = page.get_by_role("button", name=re.compile(r"^next"))
    prv = page.get_by_role("button", name=re.compile(r"^◀ prev"))
    nxt.click()
    expect(round_caption(page)).to_contain_text("step 3 ·")
    expect(page).to_have_url(url_param("step", "3"))
    settle(page)
    third = page.locator(".sv-caption").first.inner_text()
    prv.click()
    expect(round_caption(page)).to_contain_text("step 2 ·")
    expect(page).to_have_url(url_param("step", "2"))
    settle(page)
    assert page.locator(".sv-caption").first.inner_text() == first_frame
    # the same link in another session replays the same draws to the same frame
    other = tabs.open()
    open_page(other, server.url + "/round?k=5&seed=3&step=3", CAPTION_RE)
    assert other.locator(".sv-caption").first.inner_text() == third
    # a new round starts at step 0 of round 1
    page.get_by_role("button", name=re.compile(r"^new round")).click()
    expect(round_caption(page)).to_contain_text("Round 1 · step 0 ·")
    expect(page).to_have_url(url_param("rnd", "1"))
    settle(page)
    assert "step" not in query(page)  # step 0 is the default
    assert_clean(page)


def test_round_autoplay_starts_and_stops(server, page):
    open_page(page, server.url + "/round?k=8&seed=5", CAPTION_RE)
    page.locator(".st-key-round_autoplay label").click()
    # it moves by itself, frame after frame, and the URL follows
    expect(round_caption(page)).to_contain_text("step 2 ·", timeout=15_000)
    expect(page).to_have_url(re.compile(r"[?&]step=([2-9]|\d\d)"), timeout=15_000)
    page.locator(".st-key-round_autoplay label").click()
    expect(page.locator(".st-key-round_autoplay input")).not_to_be_checked()
    settle(page)
    rnd, step, _ = caption_numbers(page)
    url = page.url
    page.wait_for_timeout(3_000)  # three autoplay periods (1 s each): nothing may move
    settle(page)
    assert caption_numbers(page)[:2] == (rnd, step)
    assert page.url == url
    assert_clean(page)


# ----------------------------------------------------------------------------- downloads
def test_csv_download_is_a_valid_table(server, page, tmp_path):
    open_page(page, server.url + "/exactness?n=2000&seed=1", "TV against the sampling floor")
    with page.expect_download() as info:
        page.locator(".st-key-dl_exactness_n2000").get_by_role("button").click()
    download = info.value
    assert download.suggested_filename == "exactness_n2000.csv"
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) >= 4  # one row per rule
    assert {"rule", "mc_tv", "exact_tv", "floor"} <= set(rows[0]), rows[0].keys()
    assert "correct" in {r["rule"] for r in rows}
    for r in rows:
        assert 0.0 <= float(r["mc_tv"]) <= 1.0
        assert 0.0 <= float(r["exact_tv"]) <= 1.0
    assert_clean(page)


def test_round_transcript_download(server, page, tmp_path):
    open_page(page, server.url + "/round?k=3&seed=2&rnd=3", CAPTION_RE)
    with page.expect_download() as info:
        page.locator(".st-key-dl_round_transcript").get_by_role("button").click()
    target = tmp_path / "t.csv"
    info.value.save_as(target)
    text = target.read_text()
    header = next(csv.reader(io.StringIO(text)))
    assert header and all(h.strip() for h in header), header
    assert_clean(page)


# ----------------------------------------------------------------------------- uploads
def test_uploads_in_the_browser(server, page, tmp_path):
    """A valid CSV is used (it goes into the URL); a NaN table is refused with a message and
    the valid one stays; a file over the server's cap (server.maxUploadSize) never reaches
    the app."""
    import tomllib

    from specviz.core.tables import default_tables
    from specviz.web.urlcodec import encode_table

    d = default_tables()
    Q = d.Q.copy()
    Q[0] = d.P[0]
    good, bad, huge = tmp_path / "q.csv", tmp_path / "bad.csv", tmp_path / "huge.csv"
    good.write_text("\n".join(",".join(repr(float(x)) for x in row) for row in Q))
    bad.write_text(good.read_text().replace(repr(float(Q[1, 1])), "nan", 1))
    cap_mb = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"][
        "maxUploadSize"]
    huge.write_bytes(b"0.1," * (cap_mb * 2**20 // 4 + 1000))  # just over the cap
    open_page(page, server.url + "/", "this round emits")
    page.get_by_text("Tables (target P, draft Q)").click()
    uploader = page.locator(".st-key-up_Q input[type='file']")
    acceptance = page.locator("[data-testid='stMetricValue']").nth(1)
    before = acceptance.inner_text()

    uploader.set_input_files(good)
    expect(page).to_have_url(re.compile(r"[?&]Q="))
    settle(page)
    assert query(page)["Q"] == encode_table(Q)
    used = acceptance.inner_text()
    assert used != before

    uploader.set_input_files(bad)
    expect(page.locator("[data-testid='stAlertContentError']").first).to_contain_text("NaN")
    settle(page)
    assert query(page)["Q"] == encode_table(Q) and acceptance.inner_text() == used

    uploader.set_input_files(huge)
    expect(page.get_by_text(re.compile(rf"File must be {cap_mb}(\.0)? ?MB or smaller"))
           ).to_be_visible()
    settle(page)
    assert query(page)["Q"] == encode_table(Q) and acceptance.inner_text() == used
    assert page.locator("[data-testid='stException']").count() == 0
