"""HTML built by construction: every value is escaped unless it is already :class:`Safe`.

The pages are small and few, so instead of a template engine (one more dependency) they
are built from format strings whose placeholders go through :func:`esc`::

    html('<a href="{href}">{text}</a>', href=url("/user", u=user_id), text=belief.content)

``text`` is escaped (``<script>`` shows as text); ``href`` is already :class:`Safe`
because :func:`url` built it, query values percent-encoded. A template string is always
a literal in this package, never data.
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable
from urllib.parse import urlencode


class Safe(str):
    """A string of HTML that is safe to insert as it is (built here, never from data)."""

    __slots__ = ()


def esc(value: object) -> Safe:
    """``value`` as HTML text: ``&``, ``<``, ``>``, ``"`` and ``'`` become entities.

    :class:`Safe` values pass unchanged; ``None`` is an empty string; anything else is
    ``str()``-ed. Control characters other than tab and newline are dropped: they have no
    business in a page and some break XML-minded tools.
    """
    if isinstance(value, Safe):
        return value
    if value is None:
        return Safe("")
    text = str(value)
    if not text.isprintable():
        text = "".join(ch for ch in text if ch.isprintable() or ch in "\t\n")
    return Safe(_html.escape(text, quote=True))


def html(template: str, /, **values: object) -> Safe:
    """``template`` with each ``{name}`` replaced by ``esc(values[name])``."""
    return Safe(template.format(**{name: esc(value) for name, value in values.items()}))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    """Escaped parts joined by ``sep`` (a literal)."""
    return Safe(sep.join(esc(p) for p in parts))


def href(path: str, /, **params: object) -> str:
    """A same-site URL as plain text: ``path`` (a literal) and its query, parameters
    percent-encoded; ``None`` and ``False`` parameters are left out."""
    query = urlencode(
        {
            name: "1" if value is True else str(value)
            for name, value in params.items()
            if value is not None and value is not False
        }
    )
    return f"{path}?{query}" if query else path


def url(path: str, /, **params: object) -> Safe:
    """:func:`href`, escaped for an HTML attribute."""
    return esc(href(path, **params))
