"""The review page on the metrics port: /review (results), /review/traces/{id}, /review/breakdown, login.

Server-rendered HTML (every value escaped by monitor.web.html), plain GET forms, one stylesheet, no script.
"""

from monitor.web.pages.layout import review_headers
from monitor.web.pages.login import login_redirect, wants_login_page
from monitor.web.pages.routes import EvaluatorsInfo, review_page_routes

__all__ = ["EvaluatorsInfo", "login_redirect", "review_headers", "review_page_routes", "wants_login_page"]
