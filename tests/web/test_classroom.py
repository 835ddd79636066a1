"""Classroom parameters on every page: presenter mode, embed, lessons, kept in links and forms."""

import re

import pytest
from fastapi import Request

from app.core.lessons import LESSONS, MAX_TITLE, custom_lesson, lesson_by_slug
from app.web.classroom import CLASSROOM_PARAMS, carry_through, embed_src, with_params


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
    assert 'href="/?lang=es" data-exact data-present-toggle' in html  # the toggle: off


def test_presenter_toggle_turns_it_on_keeping_the_rest(client) -> None:
    html = client.get("/lessons", params={"lang": "es"}).text
    assert 'href="/lessons?lang=es&amp;present=1" data-exact data-present-toggle' in html


def test_embed_hides_the_site_chrome(client) -> None:
    html = client.get("/", params={"embed": "1"}).text
    assert 'class="site-header"' not in html
    assert 'class="site-footer"' not in html
    assert 'href="/" data-exact target="_blank"' in html  # out to the full page
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


def test_embed_page_gives_an_iframe_snippet_and_a_preview(client) -> None:
    html = client.get("/embed", params={"src": "/?present=1"}).text
    # the textarea shows `<iframe src="http://testserver/?present=1&amp;embed=1" …>`
    assert "&lt;iframe src=&#34;http://testserver/?present=1&amp;amp;embed=1&#34;" in html
    assert '<iframe class="embed-preview" src="/?present=1&amp;embed=1"' in html


def test_embed_page_refuses_another_site(client) -> None:
    page = client.get("/embed", params={"src": "https://evil.example/"})
    assert page.status_code == 200
    assert "is not a page of this site" in page.text
    assert "<iframe" not in page.text


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


def test_builtin_lesson_text_is_translated(client) -> None:
    html = client.get("/", params={"lesson": "worked-example", "lang": "es"}).text
    assert "El ejemplo resuelto" in html


def test_teacher_lesson_travels_in_the_url_and_is_escaped(client) -> None:
    query = {"lesson_title": "Look <here>", "lesson_text": "Row 2 & row 3", "present": "1"}
    html = client.get("/", params=query).text
    assert "Look &lt;here&gt;" in html
    assert "Row 2 &amp; row 3" in html
    share = re.search(r'readonly value="([^"]*)" data-select-on-focus', html).group(1)
    assert share.startswith("http://testserver/?")
    assert "lesson_title=Look+%3Chere%3E" in share


def test_forms_keep_the_view_and_the_lesson(client) -> None:
    html = client.get("/", params={"lang": "es", "lesson": "worked-example", "x": "1"}).text
    maker = html[html.index('class="lesson-maker"') :]
    assert '<input type="hidden" name="x" value="1">' in maker
    assert '<input type="hidden" name="lang" value="es">' in maker
    assert 'name="lesson"' not in maker.split("</form>")[0].split("<label")[0]


def test_custom_lesson_is_cut_not_refused() -> None:
    lesson = custom_lesson("t" * 500, None)
    assert lesson is not None
    assert len(lesson.heading) == MAX_TITLE
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


VIEW = [("lang", "es"), ("present", "1")]
LESSON = [("lesson", "padding")]


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            '<a href="/cost?seq_len=4096&amp;heads=2">',
            '<a href="/cost?seq_len=4096&amp;heads=2&amp;lang=es&amp;present=1">',
        ),
        ('<a class="x" href="/" data-exact>', '<a class="x" href="/" data-exact>'),
        ('<a href="https://example.org/">', '<a href="https://example.org/">'),
        ('<a href="//example.org/">', '<a href="//example.org/">'),
        ('<a href="#main">', '<a href="#main">'),
        ('<link href="/static/app.css">', '<link href="/static/app.css">'),
        ('<form method="post" action="/x">', '<form method="post" action="/x">'),
        (
            '<form id="f" action="/">',
            '<form id="f" action="/"><input type="hidden" name="lang" value="es">'
            '<input type="hidden" name="present" value="1">'
            '<input type="hidden" name="lesson" value="padding">',
        ),
        (
            '<form method="GET" action="/walkthrough">',
            '<form method="GET" action="/walkthrough"><input type="hidden" name="lang" value="es">'
            '<input type="hidden" name="present" value="1">',
        ),
    ],
)
def test_carry_through_keeps_the_view_in_local_links_and_get_forms(html, expected) -> None:
    assert carry_through(html, VIEW, LESSON, "/") == expected


def test_a_redirect_keeps_the_view_and_the_lesson(client) -> None:
    query = {"action": "generate-x", "lang": "es", "present": "1", "lesson": "padding"}
    answer = client.get("/", params=query, follow_redirects=False)
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("/?tokens=")
    assert location.endswith("&lang=es&present=1&lesson=padding")


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
