"""Classroom parameters on every page: presenter mode, embed, lessons, kept in links and forms."""

import re
from html import unescape
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from fastapi import Request
from starlette.datastructures import QueryParams

from app.core.i18n import use_locale
from app.core.lessons import LESSONS, custom_lesson, lesson_by_slug
from app.core.limits import MAX_LESSON_TEXT_CHARS, MAX_LESSON_TITLE_CHARS
from app.features.heads.form import HeadsForm
from app.features.heads.service import compute_heads
from app.settings import Settings
from app.web.classroom import CLASSROOM_PARAMS, embed_src, with_params
from tests.routes import PAGES


def body_class(html: str) -> str:
    return re.search(r'<body class="([^"]*)"', html).group(1)


@pytest.mark.parametrize(
    ("query", "classes"),
    [
        ({}, ""),
        ({"present": "1"}, "present"),
        ({"embed": "1"}, "embed"),
        ({"present": "1", "embed": "true"}, "present embed"),
        ({"present": "0"}, ""),
    ],
)
def test_modes_are_body_classes_rendered_on_the_server(client, query, classes) -> None:
    assert body_class(client.get("/", params=query).text) == classes


def test_presenter_mode_is_kept_in_every_navigation_link(client) -> None:
    html = client.get("/", params={"present": "1", "lang": "es"}).text
    for path in ("/", "/walkthrough", "/lessons"):
        assert f'href="{path}?lang=es&amp;present=1"' in html
    toggle = dict(parse_qsl(urlsplit(href_before(html, "data-exact data-present-toggle")).query))
    assert toggle["lang"] == "es"  # the toggle: off, the page's own state and language kept
    assert "present" not in toggle
    assert toggle["tokens"] == "The cat sleeps"


def href_before(html: str, marker: str) -> str:
    """The address of the link whose attributes go on with `marker`."""
    return unescape(re.search(rf'href="([^"]*)" {re.escape(marker)}', html).group(1))


def test_presenter_toggle_turns_it_on_keeping_the_rest(client) -> None:
    html = client.get("/lessons", params={"lang": "es"}).text
    assert 'href="/lessons?lang=es&amp;present=1" data-exact data-present-toggle' in html


def test_embed_hides_the_site_chrome(client) -> None:
    html = client.get("/", params={"embed": "1"}).text
    assert 'class="site-header"' not in html
    assert 'class="site-footer"' not in html
    out = urlsplit(href_before(html, 'data-exact target="_blank"'))  # out to the full page
    assert out.path == "/"
    assert "embed" not in dict(parse_qsl(out.query))
    assert "One attention head, every stage" in html


def test_classroom_parameters_never_reach_the_page_routes(app, fresh_client) -> None:
    """Pages parse their own query strictly; lang, present, embed and lesson are lifted off."""
    seen = {}

    @app.get("/probe-query")
    def probe(request: Request) -> dict:
        seen.update(request.query_params)
        return {}

    query = {"tokens": "a b", "lang": "es", "present": "1", "embed": "1", "lesson": "x"}
    fresh_client.get("/probe-query", params=query)
    assert seen == {"tokens": "a b"}


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("/", "/?embed=1"),
        ("/heads?heads=8&kv_heads=2", "/heads?heads=8&kv_heads=2&embed=1"),
        ("/?embed=1&present=1", "/?present=1&embed=1"),
        ("https://evil.example/", None),
        ("//evil.example/", None),
        ("/\\evil.example", None),
        ("heads", None),
        ("", None),
    ],
)
def test_embed_src_frames_only_this_site(src, expected) -> None:
    assert embed_src(src) == expected


HOSTILE = {"host": "evil.example", "x-forwarded-host": "evil.example"}


def test_embed_page_gives_an_iframe_snippet_and_a_preview(client) -> None:
    html = client.get("/embed", params={"src": "/?present=1"}, headers=HOSTILE).text
    # the textarea shows `<iframe src="/?present=1&amp;embed=1" …>`, completed in the browser
    assert "&lt;iframe src=&#34;/?present=1&amp;amp;embed=1&#34;" in html
    assert 'data-fill-origin="/?present=1&amp;amp;embed=1"' in html  # as the code writes it
    assert '<iframe class="embed-preview" src="/?present=1&amp;embed=1"' in html
    assert "evil.example" not in html


def test_copied_addresses_start_with_public_url_never_with_host(make_client) -> None:
    client = make_client(public_url="https://lab.example.org/")
    embed = client.get("/embed", params={"src": "/heads"}, headers=HOSTILE).text
    assert "&lt;iframe src=&#34;https://lab.example.org/heads?embed=1&#34;" in embed
    lesson = client.get("/", params={"lesson_title": "T"}, headers=HOSTILE).text
    share = unescape(re.search(r'<p class="lesson-share">.*?value="([^"]*)"', lesson, re.S)[1])
    assert share.startswith("https://lab.example.org/?")  # with the lab's state, then the lesson
    assert share.endswith("lesson_title=T")
    model = client.get("/model", headers=HOSTILE).text
    assert "curl -s -X POST https://lab.example.org/api/model -H" in model
    for html in (embed, lesson, model):
        assert "evil.example" not in html
        assert "127.0.0.1" not in html


def test_without_public_url_the_curl_example_is_a_path_the_page_completes(client) -> None:
    model = client.get("/model", headers=HOSTILE).text
    assert '<code data-fill-origin="/api/model">curl -s -X POST /api/model -H' in model
    assert "evil.example" not in model


def test_the_trailing_slash_redirect_is_relative_whatever_the_host(client) -> None:
    answer = client.get("/docs/?lang=es", headers=HOSTILE, follow_redirects=False)
    assert answer.status_code == 307
    assert answer.headers["location"] == "/docs?lang=es"
    missing = client.get("/static/no-such-file.css", follow_redirects=False)
    assert missing.status_code == 404  # a route's own 404 is not redirected


def test_embed_page_refuses_another_site(client) -> None:
    page = client.get("/embed", params={"src": "https://evil.example/"})
    assert page.status_code == 200
    assert "is not a page of this site" in page.text
    assert "<iframe" not in page.text
    long = client.get("/embed", params={"src": "z" * 50_000}).text
    assert "“" + "z" * 80 + "”" in long  # the mistake named, not repeated in full
    assert "z" * 81 + "”" not in long


def test_links_carry_the_declared_state_only(client) -> None:
    page = client.get("/cost", params={"seq_len": "4096", "junk": "j" * 50_000, "present": "1"})
    assert "jjj" not in page.text
    canonical = "seq_len=4096&amp;batch=1&amp;dtype=fp16&amp;gpu_memory_gib=24&amp;layers=1"
    canonical += "&amp;heads=1&amp;kv_heads=1&amp;head_dim=128"
    assert f'href="/cost?{canonical}" data-exact' in page.text


def test_lessons_page_links_every_builtin_lesson_with_its_state(client) -> None:
    html = client.get("/lessons").text
    for lesson in LESSONS:
        assert f'id="lesson-{lesson.slug}"' in html
        assert f"lesson={lesson.slug}" in html


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_every_builtin_lesson_opens_its_page_with_the_text(client, lesson) -> None:
    page = client.get(lesson.path, params=lesson.start)
    assert page.status_code == 200
    assert 'class="lesson-banner"' in page.text
    assert lesson.title.split("“")[0].replace("'", "&#39;") in page.text


PATH = [
    # (slug, page): one head, √d_k, masks, softmax and values, many heads, positions, the
    # quadratic cost, the kernel and the cache, the trained encoder, then the decoder
    ("worked-example", "/"),
    ("scaling", "/heads"),
    ("encoder-decoder", "/"),
    ("padding", "/"),
    ("sliding-window", "/"),
    ("softmax-values", "/walkthrough"),
    ("heads-gqa", "/heads"),
    ("positions", "/heads"),
    ("long-context-cost", "/cost"),
    ("tiled-kernel", "/kernel"),
    ("kv-cache", "/kernel"),
    ("trained-encoder", "/model"),
    ("trained-decoder", "/decoder"),
]


def test_the_lessons_follow_the_path_in_order(client) -> None:
    assert [(lesson.slug, lesson.path) for lesson in LESSONS] == PATH
    listed = re.findall(r'<li id="lesson-([\w-]+)">', client.get("/lessons").text)
    assert listed == [slug for slug, _ in PATH]


NEXT_LINK = re.compile(r'<a class="lesson-next" href="([^"]+)">([^<]+)</a>')


@pytest.mark.parametrize("number", range(len(LESSONS)), ids=[slug for slug, _ in PATH])
def test_each_lesson_ends_with_a_link_to_the_next(client, number) -> None:
    lesson = LESSONS[number]
    html = client.get(lesson.path, params={**lesson.start, "lang": "es"}).text
    banner = html[html.index('class="lesson-banner"') : html.index("</aside>")]
    assert f"Lección {number + 1} de {len(LESSONS)}" in banner
    found = NEXT_LINK.search(banner)
    if number + 1 == len(LESSONS):
        assert found is None  # the last lesson: back to all lessons
        return
    following = LESSONS[number + 1]
    href, text = unescape(found.group(1)), unescape(found.group(2))
    target = urlsplit(href)
    assert target.path == following.path
    assert dict(parse_qsl(target.query)) == {**following.start, "lang": "es"}  # the view kept
    with use_locale("es"):
        assert text == f"Siguiente lección: {following.heading} →"
    assert banner.index("lesson-text") < banner.index("lesson-next")  # after the lesson's text


def test_a_teachers_lesson_has_no_next_one(client) -> None:
    html = client.get("/", params={"lesson_title": "Mine"}).text
    assert "lesson-next" not in html
    assert "Lesson 1 of" not in html


def test_the_worked_example_lessons_say_the_apis_numbers(client) -> None:
    """The one-head and softmax lessons quote the worked example: the numbers are the API's."""
    answer = client.post("/api/attention", json={}).json()
    cat = 1
    scaled = ", ".join(f"{v:.3f}" for v in answer["scaled"][cat]).replace(".000", "")
    weights = [f"{w:.3f}" for w in answer["weights"][cat]]
    output = "[" + ", ".join(f"{v:.3f}".replace("-", "−") for v in answer["output"][cat]) + "]"
    one_head, softmax = lesson_by_slug("worked-example").text, lesson_by_slug("softmax-values").text
    assert scaled == "0.707, 0, 0.707"
    assert "gives 0.707, 0 and 0.707" in one_head
    assert f"into {weights[0]} and {weights[1]}" in one_head
    assert output in one_head
    assert output in softmax
    assert f"{weights[0]} for “The”, {weights[1]} for itself and 0 for “sleeps”" in softmax
    v_the, v_cat = (str(row).replace("1.0", "1").replace("-", "−") for row in answer["v"][:2])
    assert f"{weights[0]} × {v_the} + {weights[1]} × {v_cat} = {output}" in softmax


def test_the_scaling_lesson_shows_saturation_that_scaling_undoes() -> None:
    """“Most rows put more than 0.9 of their weight on a single key”, and none once scaled."""
    lesson = lesson_by_slug("scaling")
    saturated = {}
    for scale in ("off", "on"):
        form, problems, _ = HeadsForm.read(QueryParams({**lesson.params, "scale": scale}))
        assert problems == []
        weights = np.array(
            [head.weights for head in compute_heads(form.request(), Settings()).heads]
        )
        saturated[scale] = float((weights.max(axis=-1) > 0.9).mean())
    assert lesson.params["scale"] == "off"
    assert saturated["off"] > 0.5
    assert saturated["on"] == 0


def test_the_positions_lesson_shows_identical_rows_until_position_is_added(client) -> None:
    lesson = lesson_by_slug("positions")
    plain = client.get(lesson.path, params=lesson.start).text
    assert 'data-equivariant="yes"' in plain
    assert re.findall(r'<li data-gap="([^"]+)"', plain) == ["0.0"]  # the two “the”
    for kind in ("sinusoidal", "rope"):
        placed = client.get(lesson.path, params={**lesson.start, "positional": kind}).text
        assert 'data-equivariant="no"' in placed
        assert float(re.search(r'<li data-gap="([^"]+)"', placed).group(1)) > 0.01


def test_builtin_lesson_text_is_translated(client) -> None:
    html = client.get("/", params={"lesson": "worked-example", "lang": "es"}).text
    assert "Una cabeza: el ejemplo resuelto" in html


def test_teacher_lesson_travels_in_the_url_and_is_escaped(client) -> None:
    query = {"lesson_title": "Look <here>", "lesson_text": "Row 2 & row 3", "present": "1"}
    html = client.get("/", params=query).text
    assert "Look &lt;here&gt;" in html
    assert "Row 2 &amp; row 3" in html
    share = re.search(r'readonly value="([^"]*)" data-select-on-focus', html).group(1)
    assert share.startswith("/?")  # completed with the browser's address by classroom.js
    assert "lesson_title=Look+%3Chere%3E" in share


def test_forms_keep_the_view_and_the_lesson(client) -> None:
    params = {"lang": "es", "lesson": "worked-example", "tokens": "a b", "x": "1,2;3,4"}
    html = client.get("/", params=params).text
    maker = html[html.index('class="lesson-maker"') :]
    assert '<input type="hidden" name="x" value="1,2;3,4">' in maker
    assert '<input type="hidden" name="lang" value="es">' in maker
    assert 'name="lesson"' not in maker.split("</form>")[0].split("<label")[0]


def test_custom_lesson_is_cut_not_refused() -> None:
    lesson = custom_lesson("t" * 500, None)
    assert lesson is not None
    assert len(lesson.heading) == MAX_LESSON_TITLE_CHARS
    assert custom_lesson("  ", "") is None
    assert lesson_by_slug("no-such-lesson") is None


def test_classroom_parameter_names_are_the_documented_ones() -> None:
    assert set(CLASSROOM_PARAMS) == {
        "lang",
        "present",
        "embed",
        "lesson",
        "lesson_title",
        "lesson_text",
    }


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/", "/?lang=es&present=1"),
        ("/heads?heads=8#out", "/heads?heads=8&lang=es&present=1#out"),
        ("/?lang=en", "/?lang=en&present=1"),  # a language switch keeps its choice
    ],
)
def test_with_params_adds_only_what_a_link_does_not_set(target, expected) -> None:
    assert with_params(target, [("lang", "es"), ("present", "1")]) == expected


class LinksAndForms(HTMLParser):
    """Every <a href> of a page and every GET form with the hidden inputs it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []
        self.forms: list[tuple[dict[str, str | None], list[tuple[str, str]]]] = []
        self.form: tuple[dict[str, str | None], list[tuple[str, str]]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "a" and attributes.get("href"):
            self.links.append(attributes)
        elif tag == "form" and (attributes.get("method") or "get").lower() == "get":
            self.form = (attributes, [])
            self.forms.append(self.form)
        elif tag == "input" and self.form and attributes.get("type") == "hidden":
            self.form[1].append((attributes["name"] or "", attributes.get("value") or ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.form = None


def local(target: str) -> bool:
    parts = urlsplit(target)
    return not parts.scheme and not parts.netloc and target.startswith("/")


VIEW = [("lang", "es"), ("present", "1")]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_builds_its_links_and_forms_with_the_view(client, path: str) -> None:
    """No rewriting of the answer: each template carries the view itself (classroom.link and
    classroom.fields), the lesson only in a form that stays on the page."""
    page = client.get(path, params=[*VIEW, ("lesson", "padding")])
    assert page.status_code == 200
    parsed = LinksAndForms()
    parsed.feed(page.text)
    links = [a for a in parsed.links if local(a["href"]) and "data-exact" not in a]
    assert links, "every page links to the others"
    for a in links:
        query = parse_qsl(urlsplit(a["href"]).query)
        assert set(VIEW) <= set(query) or ("lang", "en") in query, a["href"]
    forms = [(f, hidden) for f, hidden in parsed.forms if "data-exact" not in f]
    for attributes, hidden in forms:
        action = attributes.get("action") or path
        assert set(VIEW) <= set(hidden), action
        assert (("lesson", "padding") in hidden) == (urlsplit(action).path == path), action


def test_pages_say_when_a_lesson_was_cut_and_carry_only_its_limits(make_client) -> None:
    """A 60 KB lesson text (the longest address the server can be set to take) is cut to
    the limit in the banner and in every link, and the page says so."""
    text, title = "x" * 61_440, "t" * 500
    query = {"lesson_title": title, "lesson_text": text, "present": "1"}
    page = make_client(max_query_bytes=65_000).get("/lessons", params=query)
    assert page.status_code == 200
    assert "x" * MAX_LESSON_TEXT_CHARS in page.text
    assert "x" * (MAX_LESSON_TEXT_CHARS + 1) not in page.text
    assert "t" * (MAX_LESSON_TITLE_CHARS + 1) not in page.text
    assert len(page.content) < 80_000  # the page without a lesson is ~10 KB
    assert "lesson_text: longer than 1,500 characters; this page uses" in page.text
    assert "lesson_title: longer than 120 characters" in page.text
    carry = dict(parse_qsl(unescape(re.search(r'data-carry="([^"]*)"', page.text).group(1))))
    assert len(carry["lesson_text"]) == MAX_LESSON_TEXT_CHARS


@pytest.mark.parametrize(
    ("path", "name", "limit"),
    [
        ("/model", "text", 1000),
        ("/model", "compare", 1000),
        ("/heads", "text", 2000),
        ("/", "tokens", 256 * 41),  # max_tokens labels of at most 40 characters, spaced
        ("/walkthrough", "tokens", 256 * 41),
        ("/kernel", "tokens", 256 * 41),
    ],
)
def test_a_60_kb_text_is_cut_to_its_field_and_the_page_says_so(
    make_client, path: str, name: str, limit: int
) -> None:
    client = make_client(max_query_bytes=65_000)
    page = client.get(path, params={name: "word " * 12_288, "present": "1"})  # 61,440 chars
    assert f"{name}: longer than {limit:,} characters; this page uses and carries" in page.text
    assert "word " * (limit // 5 + 1) not in page.text
    assert page.text.count("word " * (limit // 5 - 1)) <= 6  # the form and the view's links


def test_an_unknown_lesson_is_named_cut_and_not_carried(client) -> None:
    page = client.get("/cost", params={"lesson": "y" * 5000, "lang": "es"})
    assert "y" * 80 in page.text
    assert "y" * 81 not in page.text
    assert "lesson=" not in page.text
    assert page.text.count("lang=es") > 10


def test_a_button_applied_in_place_keeps_the_view_and_the_lesson_in_its_undo_link(
    client,
) -> None:
    query = {"action": "generate-x", "lang": "es", "present": "1", "lesson": "padding"}
    answer = client.get("/", params=query, follow_redirects=False)
    assert answer.status_code == 200  # applied in place, with one step of undo
    undo = re.search(r'id="undo-link" href="([^"]*)"', answer.text).group(1)
    assert undo.startswith("/?tokens=")
    assert "action=" not in undo
    assert undo.endswith("&amp;lang=es&amp;present=1&amp;lesson=padding")


def test_pages_without_classroom_parameters_are_left_alone(client) -> None:
    html = client.get("/lessons").text
    assert 'href="/walkthrough"' in html
    assert "data-carry" not in html


def test_the_lab_fragment_keeps_the_view_in_its_links(client) -> None:
    html = client.get("/", params={"fragment": "1", "present": "1", "tokens": "a b"}).text
    for link in ("state-link", "walk-link"):
        href = re.search(rf'id="{link}" href="([^"]*)"', html).group(1)
        assert href.endswith("&amp;present=1")
        assert "tokens=a+b" in href


def test_the_embed_view_may_be_framed_by_the_configured_course_site(make_client) -> None:
    course = "'self' https://course.example.org"
    page = make_client(frame_ancestors=course).get(
        "/walkthrough", params={"embed": "1", "step": "scores"}
    )
    assert page.status_code == 200
    assert f"frame-ancestors {course}" in page.headers["content-security-policy"]
    assert 'class="site-header"' not in page.text
