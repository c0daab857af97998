"""Cross-site request protection for the review page's forms that change something (reviews; login and logout
check the fetch site only).

A form that writes is accepted only when all hold: the browser says the post came from this site (Sec-Fetch-Site:
same-origin or none: a cross-site form post says cross-site), the review session cookie is valid (it is
SameSite=Strict: a cross-site post does not carry it), and the form's hidden `csrf` field is this session's token
(an HMAC of the session's nonce under the API token: a page of another site cannot read it). No token configured
means no session, so nothing is written from the page.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from monitor.auth import SESSION_COOKIE
from monitor.web.access import Access

FIELD = "csrf"  # the hidden form field
SAME_SITE = frozenset({"same-origin", "none"})


def csrf_token(access: Access, request: web.BaseRequest) -> str | None:
    """The token the page's forms carry for this request's review session; None without one (no form then)."""
    nonce = access.session(request.cookies.get(SESSION_COOKIE))
    if nonce is None or access.token is None:
        return None
    return hmac.new(access.token.encode(), f"csrf:{nonce}".encode(), "sha256").hexdigest()


def refusal(access: Access, request: web.BaseRequest, offered: str | None) -> str | None:
    """Why a form post that writes is refused (None: accepted)."""
    if request.headers.get("Sec-Fetch-Site", "none") not in SAME_SITE:
        return "this form only accepts posts from this site"
    expected = csrf_token(access, request)
    if expected is None:
        return "sign in to review (the review session is missing or has expired)"
    if not offered or not hmac.compare_digest(offered.encode("utf-8", "surrogateescape"), expected.encode()):
        return "the form is out of date or was not made by this site: reload the page"
    return None
