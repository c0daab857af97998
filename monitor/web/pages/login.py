"""The login form (the API token in, an HttpOnly session cookie out), logout, and the redirect to the form.

The cookie holds a session of the token (a nonce, an expiry and their HMAC keyed by the token, monitor/auth.py),
never the token; the metrics port's auth middleware (access.py) accepts it on every non-open path until it expires
or its owner logs out (revoked: a replayed cookie is refused). Wrong tokens count towards the client's guess
limit (429 with Retry-After), checked and counted once the form is read. `next` only ever leads back under
/review on this site: anything else (another host, `//host`, a backslash, `..`) goes to /review instead.
"""

from __future__ import annotations

import hmac
from urllib.parse import quote, urlsplit

from aiohttp import web

from monitor.auth import SESSION_COOKIE, SESSION_TTL, session_value
from monitor.web.access import Access
from monitor.web.html import Html, el
from monitor.web.pages.layout import LOGIN, LOGOUT, ROOT, STATIC_PREFIX, ReviewSite, error_page, is_review_path, respond
from monitor.web.pages.layout import shell as page_shell

SAME_SITE_FETCH = ("same-origin", "none")


def safe_next(value: str | None) -> str:
    """`value` when it is a relative path under /review on this site (query kept), else /review."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return ROOT
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in value):
        return ROOT
    parts = urlsplit(value)
    path = parts.path
    if parts.scheme or parts.netloc or not is_review_path(path) or ".." in path.split("/") or "." in path.split("/"):
        return ROOT
    if path in (LOGIN, LOGOUT) or path.startswith(STATIC_PREFIX):
        return ROOT
    return value


def login_url(next_path: str) -> str:
    return f"{LOGIN}?next={quote(safe_next(next_path), safe='')}"


def wants_login_page(request: web.BaseRequest) -> bool:
    """A browser asking for a review page without a session: it gets the login form, not a bare 401."""
    return (
        request.method in ("GET", "HEAD")
        and is_review_path(request.path)
        and "text/html" in request.headers.get("Accept", "")
    )


def login_redirect(request: web.BaseRequest) -> web.Response:
    """303 to the login form, with `next` set to the page asked for."""
    return web.Response(status=303, headers={"Location": login_url(str(request.rel_url))})


def _redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def _cross_site(request: web.Request) -> bool:
    """A form posted from another site (browsers send Sec-Fetch-Site; other clients send none)."""
    return request.headers.get("Sec-Fetch-Site", "none") not in SAME_SITE_FETCH


def login_form(next_path: str, message: str | None = None) -> Html:
    form = el(
        "form",
        el("input", type="hidden", name="next", value=safe_next(next_path)),
        el(
            "label",
            el("span", "API token"),
            el(
                "input",
                type="password",
                name="token",
                id="token",
                autofocus=True,
                autocomplete="current-password",
                required=True,
            ),
        ),
        el("button", "log in", type="submit"),
        method="post",
        action=LOGIN,
        class_="login",
    )
    main = [
        el("h1", "agent-monitor review"),
        el("p", message, class_="problem") if message else None,
        el("p", "Log in with the metrics port's API token (api.auth, else receivers.auth)."),
        form,
    ]
    return page_shell(None, "log in", main)


def login_routes(site: ReviewSite) -> list[web.RouteDef]:
    access = site.access if site.access is not None else Access(site.token)
    token = access.token

    def throttled(wait: int) -> web.Response:
        message = f"Too many wrong tokens from this client: try again in {wait} s."
        page = error_page(None, 429, "too many attempts", message)
        page.headers["Retry-After"] = str(wait)
        return page

    async def show(request: web.Request) -> web.Response:
        next_path = safe_next(request.query.get("next"))
        if not token or access.session(request.cookies.get(SESSION_COOKIE)) is not None:
            return _redirect(next_path)  # no token configured (access.py decides), or already logged in
        return respond(login_form(next_path))

    async def submit(request: web.Request) -> web.Response:
        if _cross_site(request):
            return error_page(None, 403, "forbidden", "This form only accepts posts from this site.")
        wait = access.too_many(request.remote)
        if wait:
            return throttled(wait)
        form = await request.post()
        next_path = safe_next(_text(form.get("next")))
        if not token:
            return _redirect(next_path)
        offered, expected = _text(form.get("token")).strip().encode("utf-8", "surrogateescape"), token.encode()
        # Checked and counted after the body is read, in one step: posts held open on their last byte are
        # throttled like any others (a check made before reading would let them all through to the compare).
        right, wait = access.try_token(request.remote, lambda: hmac.compare_digest(offered, expected))
        if wait:
            return throttled(wait)
        if not right:
            return respond(login_form(next_path, "That is not the API token."), 401)
        response = _redirect(next_path)
        response.set_cookie(
            SESSION_COOKIE,
            session_value(token),
            path="/",
            max_age=int(SESSION_TTL),
            httponly=True,
            samesite="Strict",
            secure=True if request.secure else None,
        )
        return response

    async def logout(request: web.Request) -> web.Response:
        """Ends the session here and now: its cookie is refused from then on, even when replayed."""
        if _cross_site(request):
            return error_page(None, 403, "forbidden", "This form only accepts posts from this site.")
        nonce = access.session(request.cookies.get(SESSION_COOKIE))
        if nonce is not None:
            access.revoked.revoke(nonce)
        response = _redirect(LOGIN if token else ROOT)
        response.del_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="Strict")
        return response

    return [web.get(LOGIN, show), web.post(LOGIN, submit), web.post(LOGOUT, logout)]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
