"""Content negotiation for /metrics: OpenMetrics (with exemplars) when asked for, else the classic text format."""

from __future__ import annotations

from prometheus_client import exposition as classic
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.registry import CollectorRegistry

OPENMETRICS_TYPE = "application/openmetrics-text"
OPENMETRICS_CONTENT_TYPE = openmetrics.CONTENT_TYPE_LATEST  # application/openmetrics-text; version=1.0.0; ...
CLASSIC_CONTENT_TYPE = classic.CONTENT_TYPE_LATEST


def _media_ranges(accept_header: str) -> list[tuple[str, float]]:
    """(media type, q) for every range in an Accept header; malformed q values count as 1."""
    ranges = []
    for part in accept_header.split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        q = 1.0
        for param in fields[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 1.0
        ranges.append((media, q))
    return ranges


def wants_openmetrics(accept_header: str | None) -> bool:
    """True when the Accept header asks for OpenMetrics at least as strongly as for plain text."""
    if not accept_header:
        return False
    ranges = _media_ranges(accept_header)
    om_q = max((q for media, q in ranges if media == OPENMETRICS_TYPE), default=0.0)
    text_q = max((q for media, q in ranges if media == "text/plain"), default=0.0)
    return om_q > 0 and om_q >= text_q


def render(registry: CollectorRegistry, accept_header: str | None) -> tuple[bytes, str]:
    """The registry's exposition and its content type, chosen from the Accept header."""
    if wants_openmetrics(accept_header):
        return openmetrics.generate_latest(registry), OPENMETRICS_CONTENT_TYPE
    return classic.generate_latest(registry), CLASSIC_CONTENT_TYPE
