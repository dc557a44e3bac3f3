"""The memory browser: a small local web application over one ``Memory``.

``mem01session ui`` serves it (:mod:`.server`); :func:`create_app` builds the Starlette
application. Pages (:mod:`.pages`) read through the memory's verbs; actions
(:mod:`.actions`) change memory through the same verbs as the library's users, recorded
with the source ``"inspector"``. HTML is built by :mod:`.markup`, which escapes every
value it is given; :mod:`.security` holds the loopback default, the access token, the
CSRF token and the response headers.
"""

from .app import create_app
from .security import Access

__all__ = ["Access", "create_app"]
