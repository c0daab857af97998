"""The `review` config section: the review page on the metrics port (/review), its trace-UI link and page size."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import quote, urlsplit

from pydantic import Field, field_validator

from .units import Section

TRACE_ID_PLACEHOLDER = "{trace_id}"
MAX_PAGE_SIZE = 500
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


class ReviewConfig(Section):
    """`trace_url_template`: a link to the trace in a trace UI (Jaeger, Grafana/Tempo), `{trace_id}` replaced
    (URL-encoded); "" shows no link. `page_size`: results per page of /review."""

    trace_url_template: str = ""
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE)] = 50

    @field_validator("trace_url_template")
    @classmethod
    def _template(cls, template: str) -> str:
        template = template.strip()
        if not template:
            return ""
        if TRACE_ID_PLACEHOLDER not in template:
            raise ValueError(f"must contain {TRACE_ID_PLACEHOLDER}, e.g. http://localhost:16686/trace/{{trace_id}}")
        if _CONTROL.search(template):
            raise ValueError("must not contain spaces or control characters (URL-encode them)")
        parts = urlsplit(template.replace(TRACE_ID_PLACEHOLDER, "0"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"must be an http:// or https:// URL, got {template!r}")
        return template

    def trace_url(self, trace_id: str) -> str | None:
        """The trace UI's URL for `trace_id`, or None without a template."""
        if not self.trace_url_template:
            return None
        return self.trace_url_template.replace(TRACE_ID_PLACEHOLDER, quote(trace_id, safe=""))
