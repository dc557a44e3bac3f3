"""HTML by construction: values are escaped unless built as Safe here."""

from __future__ import annotations

import pytest

from mem01session.ui.markup import Safe, esc, href, html, join, url


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("<script>alert('x')</script>", "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"),
        ('a "quoted" & </memory>', "a &quot;quoted&quot; &amp; &lt;/memory&gt;"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("bell\x07 and nul\x00 and rtl\u202e gone", "bell and nul and rtl gone"),
        (None, ""),
        (42, "42"),
    ],
)
def test_esc(value: object, expected: str) -> None:
    assert esc(value) == expected
    assert isinstance(esc(value), Safe)


def test_safe_values_pass_once_and_are_never_escaped_twice() -> None:
    inner = html("<b>{x}</b>", x="<i>")
    assert inner == "<b>&lt;i&gt;</b>"
    assert html("<p>{inner}</p>", inner=inner) == "<p><b>&lt;i&gt;</b></p>"
    assert esc(inner) is inner


def test_template_braces_in_values_are_plain_text() -> None:
    assert html("<p>{a}</p>", a="{b} {0}") == "<p>{b} {0}</p>"


def test_attribute_values_cannot_break_out() -> None:
    out = html('<input value="{v}">', v='" onfocus="alert(1)')
    assert out == '<input value="&quot; onfocus=&quot;alert(1)">'


def test_join_escapes_each_part() -> None:
    assert join(["<a>", Safe("<br>"), 3], ", ") == "&lt;a&gt;, <br>, 3"


def test_urls_encode_parameters_and_escape_for_attributes() -> None:
    assert href("/user", u="a&b=c/d ü", q=None, all=False) == "/user?u=a%26b%3Dc%2Fd+%C3%BC"
    assert href("/jobs", u="x", n=0, flag=True) == "/jobs?u=x&n=0&flag=1"
    assert url("/belief", u='"><script>', id=3) == "/belief?u=%22%3E%3Cscript%3E&amp;id=3"
    assert href("/") == "/"
