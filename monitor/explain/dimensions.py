"""The dimensions of one built trace: the (dimension, value) pairs the store keeps per trace, for the contrast of
failing traces with passing ones (issue 42). Pure: no I/O besides loading the language model once per process.

Every value goes through `codes.clean_value`; the pairs are distinct, at most `MAX_VALUES` per dimension and
`codes.MAX_PAIRS` in all (the single-valued dimensions first, then the configured ones, then the lists: models,
agents, tools, providers, prompts). A value that cannot be read is left out; `dimensions_of` never raises.

- `service` (the root's `service.name`, "unknown"), and from the resource attributes (the root's first):
  `service.version`, `deployment.environment` (`deployment.environment.name`, semconv 1.27+, or the older
  `deployment.environment`), `k8s.namespace.name`, `k8s.deployment.name`, `k8s.pod.name`, `cloud.region`,
  `cloud.availability_zone`, `host.name`.
- From the views: `agent`, `model` (the request model, else the response model), `provider` (as the conventions
  normalise it: `LLMSpan.provider`), `tool`, `tool.failed` (a tool whose span failed).
- Who and where: `user.id`, `session.id` (`evaluators.sessions.session_of`), `tenant.id`: `USER_ATTRIBUTES`,
  `TENANT_ATTRIBUTES`, read on the spans (root first), then the resources.
- `prompt.template`, `prompt.version`: `TEMPLATE_ATTRIBUTES`, `VERSION_ATTRIBUTES`, on any span. A registry key
  or name is kept as it is; a template's text becomes `template_id` (its first 40 characters and a hash).
- `input.length` (`length_bucket` of `Trace.input`), `input.language`, `turn`, `hour` (UTC, of the trace's start).
- `turn`: only for a trace with a session id, the number of user messages its first LLM request carries (the
  frameworks that keep a conversation resend it each turn: `evaluators.traces.turn_input`; the first request
  with a user message), bucketed. A framework
  that keeps the history on the server (sends only the new message) reads as turn 1 on every turn.
- `input.language`: py3langid over the input's first `LANGUAGE_CHARS` characters, with normalised probabilities;
  "und" below `MIN_LETTERS` letters or a top probability under `MIN_PROBABILITY`. Its cost is linear in the text
  (py3langid's tokenizer steps through it in Python), measured on the development host (2 cores, py3langid
  0.4.0): 147 µs on 300 characters, 82 µs on 160, 53 µs on 120 (what is classified: a question's first sentence
  is enough, and the whole daemon's CPU per trace rose 12 % with 300, tests/bench/bench_ab_baseline.py), 41 µs on
  80; loading the model
  takes 0.6-1 s and ~78 MB of resident memory, once per process that detects a language (each evaluation worker,
  on its first trace). The identifier is `evaluators.language`'s, shared with the `response_language` evaluator,
  which classifies the same cut of the input (its last classifications are remembered: one classification serves
  both). pycld2 (25 µs, 2 MB) was measured too and left: it names short French and Italian questions
  English or nothing, where py3langid has them right.
- `explain.dimensions`: each attribute's first value in the resource attributes, else on the spans (root first),
  under its own name (a name that is already a built-in dimension is skipped).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

from evaluators.language import LANGUAGE_CHARS, detect_language, letters
from evaluators.sessions import session_of
from evaluators.traces.model import Trace
from evaluators.traces.spans import Span
from evaluators.traces.turn_input import user_messages
from monitor.config.explain import ExplainConfig
from monitor.store.dimension_codes import MAX_PAIRS, Pair, clean_value

log = logging.getLogger(__name__)

MAX_VALUES = 8  # values kept per multi-valued dimension
MIN_LETTERS = 12  # fewer letters than this: "und"
MIN_PROBABILITY = 0.5  # a top language less likely than this: "und"
UNDETERMINED = "und"
TEMPLATE_PREFIX = 40  # characters of a template's text in its id

# (dimension, the resource attribute names that give it, best first)
RESOURCE_DIMENSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("service.version", ("service.version",)),
    ("deployment.environment", ("deployment.environment.name", "deployment.environment")),
    ("k8s.namespace.name", ("k8s.namespace.name",)),
    ("k8s.deployment.name", ("k8s.deployment.name",)),
    ("k8s.pod.name", ("k8s.pod.name",)),
    ("cloud.region", ("cloud.region",)),
    ("cloud.availability_zone", ("cloud.availability_zone",)),
    ("host.name", ("host.name",)),
)
USER_ATTRIBUTES = (
    "user.id",  # OpenInference (using_user), OTel's user registry (Langfuse reads it too)
    "enduser.id",  # OTel general attributes
    "langfuse.user.id",  # Langfuse's own OTel attribute
    "traceloop.association.properties.user_id",  # OpenLLMetry Traceloop.set_association_properties
    "ai.telemetry.metadata.userId",  # Vercel AI SDK experimental_telemetry.metadata (Langfuse's key)
    "ai.telemetry.metadata.user_id",
)
# No GenAI convention names a tenant: these are the names in common use.
TENANT_ATTRIBUTES = ("tenant.id", "tenant_id", "traceloop.association.properties.tenant_id", "org.id")
TEMPLATE_ATTRIBUTES = (
    "traceloop.prompt.key",  # OpenLLMetry prompt registry: the prompt's key
    "langfuse.observation.prompt.name",  # Langfuse prompt management
    "llm.prompt_template.template",  # OpenInference using_prompt_template: the template's text
    "traceloop.prompt.template",  # OpenLLMetry: the template's text (when it has no key)
)
TEMPLATE_TEXTS = frozenset({"llm.prompt_template.template", "traceloop.prompt.template"})
_TEMPLATES = frozenset(TEMPLATE_ATTRIBUTES)
VERSION_ATTRIBUTES = (
    "llm.prompt_template.version",  # OpenInference
    "traceloop.prompt.version",  # OpenLLMetry
    "langfuse.observation.prompt.version",  # Langfuse
)
_VERSIONS = frozenset(VERSION_ATTRIBUTES)
BUILT_IN = frozenset(
    {
        "service", "agent", "model", "provider", "tool", "tool.failed", "user.id", "session.id", "tenant.id",
        "prompt.template", "prompt.version", "input.language", "input.length", "turn", "hour",
        *(name for name, _ in RESOURCE_DIMENSIONS),
    }
)  # fmt: skip
_LENGTHS = ((100, "<100"), (500, "100-499"), (2000, "500-1999"), (10_000, "2000-9999"))
_TURNS = ((1, "1"), (2, "2"), (3, "3"), (5, "4-5"), (10, "6-10"))
_HOUR_NS = 3600 * 10**9


class DimensionSettings(NamedTuple):
    """What `dimensions_of` reads besides the built-in dimensions."""

    extra: tuple[str, ...] = ()  # `explain.dimensions`: attribute names
    language: bool = True  # `explain.language`: detect the input's language
    session_attributes: tuple[str, ...] = ()  # `sessions.attribute`: tried first for a trace's session id

    @classmethod
    def from_config(cls, config: ExplainConfig, session_attributes: Sequence[str] = ()) -> DimensionSettings:
        return cls(tuple(config.dimensions), config.language, tuple(session_attributes))


def length_bucket(length: int) -> str:
    """The bucket of a text of `length` characters."""
    for bound, label in _LENGTHS:
        if length < bound:
            return label
    return "≥10000"


def turn_bucket(turn: int) -> str:
    """The bucket of a conversation's turn number (1 is the first)."""
    for bound, label in _TURNS:
        if turn <= bound:
            return label
    return ">10"


def template_id(text: str) -> str:
    """A short, stable id of a prompt template's text: its first characters (whitespace collapsed) and a hash of
    the whole text, e.g. `Describe the weather in {city}… #1a2b3c4d`."""
    digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=4).hexdigest()
    head = " ".join(text[: TEMPLATE_PREFIX * 4].split())
    if len(head) > TEMPLATE_PREFIX:
        head = head[:TEMPLATE_PREFIX] + "…"
    return f"{head} #{digest}"


def _text(value: object) -> str | None:
    """A scalar attribute value as a dimension's value (None: not a scalar, or blank)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str | int | float):
        return None
    return clean_value(value) or None


class _Pairs:
    """The pairs of one trace as they are found: cleaned, distinct, bounded per dimension and in all."""

    def __init__(self) -> None:
        self.pairs: dict[Pair, None] = {}
        self.counts: dict[str, int] = {}

    def add(self, dimension: str, value: object) -> None:
        if value is None:
            return
        text = _text(value)
        count = self.counts.get(dimension, 0)
        if text is None or count >= MAX_VALUES or len(self.pairs) >= MAX_PAIRS or (dimension, text) in self.pairs:
            return
        self.pairs[(dimension, text)] = None
        self.counts[dimension] = count + 1

    def extend(self, dimension: str, values: Iterable[object]) -> None:
        for value in values:
            if self.counts.get(dimension, 0) >= MAX_VALUES or len(self.pairs) >= MAX_PAIRS:
                return
            self.add(dimension, value)


class _View(NamedTuple):
    """The trace's spans, roots first, and its distinct resource attribute maps, the root's first."""

    spans: list[Span]
    resources: list[dict[str, Any]]


def _view(trace: Trace) -> _View:
    roots = list(trace.roots)
    root_ids = {id(r) for r in roots}
    spans = [*roots, *(s for s in trace.spans if id(s) not in root_ids)]
    resources: dict[int, dict[str, Any]] = {}
    for span in spans:
        resource = span.record.resource_attributes
        if isinstance(resource, dict) and resource:
            resources.setdefault(id(resource), resource)
    return _View(spans, list(resources.values()))


def _span_maps(view: _View) -> Iterator[dict[str, Any]]:
    return (a for s in view.spans if isinstance(a := s.record.attributes, dict))


def _first(maps: Iterable[dict[str, Any]], names: Sequence[str]) -> str | None:
    """The first value one of `names` has in the first map that holds one (names in order within a map)."""
    wanted = frozenset(names)
    for attributes in maps:
        if wanted.isdisjoint(attributes):
            continue
        for name in names:
            if name in attributes and (text := _text(attributes[name])) is not None:
                return text
    return None


def _resources(trace: Trace, view: _View, pairs: _Pairs) -> None:
    pairs.add("service", trace.service_name or "unknown")
    for dimension, names in RESOURCE_DIMENSIONS:
        pairs.add(dimension, _first(view.resources, names))


def _identities(view: _View, pairs: _Pairs) -> None:
    pairs.add("user.id", _first(chain(_span_maps(view), view.resources), USER_ATTRIBUTES))
    pairs.add("tenant.id", _first(chain(_span_maps(view), view.resources), TENANT_ATTRIBUTES))


def _session(trace: Trace, pairs: _Pairs, settings: DimensionSettings) -> None:
    ref = session_of(trace, settings.session_attributes)
    if ref is not None:
        pairs.add("session.id", ref.session_id)
        turn = _turn(trace)
        pairs.add("turn", turn_bucket(turn) if turn else None)


def _turn(trace: Trace) -> int:
    """The number of user messages the first LLM request that has any carries (0: none has)."""
    for call in trace.get_llm_calls():
        count = len(user_messages(call))
        if count:
            return count
    return 0


def _input(trace: Trace, pairs: _Pairs, settings: DimensionSettings) -> None:
    text = trace.input
    if text is None:
        return
    pairs.add("input.length", length_bucket(len(text)))
    if settings.language:
        pairs.add("input.language", language_of(text))


def _hour(trace: Trace, pairs: _Pairs) -> None:
    start = trace.start_time
    if isinstance(start, int) and start > 0:
        pairs.add("hour", f"{start // _HOUR_NS % 24:02d}")


def _extra(view: _View, pairs: _Pairs, settings: DimensionSettings) -> None:
    for name in settings.extra:
        dimension = clean_value(name)
        if dimension and dimension not in BUILT_IN:
            pairs.add(dimension, _first(chain(view.resources, _span_maps(view)), (name,)))


def _steps(trace: Trace, pairs: _Pairs) -> None:
    calls = trace.get_llm_calls()
    pairs.extend("model", (c.model or c.response_model for c in calls))
    pairs.extend("agent", trace.agent_names)
    tools = trace.get_tool_calls()
    pairs.extend("tool", (t.name for t in tools))
    pairs.extend("tool.failed", (t.name for t in tools if t.has_error))
    pairs.extend("provider", (c.provider for c in calls))


def _prompts(view: _View, pairs: _Pairs) -> None:
    templates: list[str] = []
    versions: list[str] = []
    for attributes in _span_maps(view):
        if len(templates) < MAX_VALUES and not _TEMPLATES.isdisjoint(attributes):
            template = _template_of(attributes)
            if template is not None:
                templates.append(template)
        if len(versions) < MAX_VALUES and not _VERSIONS.isdisjoint(attributes):
            version = _first((attributes,), VERSION_ATTRIBUTES)
            if version is not None:
                versions.append(version)
    pairs.extend("prompt.template", templates)
    pairs.extend("prompt.version", versions)


def _template_of(attributes: dict[str, Any]) -> str | None:
    """The span's prompt template: a registry key or name as it is, a template's text as its `template_id`."""
    for name in TEMPLATE_ATTRIBUTES:
        value = attributes.get(name)
        if _text(value) is None:
            continue
        if name not in TEMPLATE_TEXTS:
            return _text(value)
        if isinstance(value, str):
            return template_id(value)
    return None


def dimensions_of(trace: Trace, settings: DimensionSettings) -> tuple[Pair, ...]:
    """The (dimension, value) pairs of `trace` (see the module's docstring), in the order they are kept."""
    pairs = _Pairs()
    try:
        view = _view(trace)
    except Exception:
        log.debug("trace %s: its spans could not be read for dimensions", getattr(trace, "trace_id", "?"))
        view = _View([], [])
    steps: tuple[Callable[[], None], ...] = (
        lambda: _resources(trace, view, pairs),
        lambda: _identities(view, pairs),
        lambda: _session(trace, pairs, settings),
        lambda: _input(trace, pairs, settings),
        lambda: _hour(trace, pairs),
        lambda: _extra(view, pairs, settings),
        lambda: _steps(trace, pairs),
        lambda: _prompts(view, pairs),
    )
    for step in steps:
        try:
            step()
        except Exception as exc:  # an odd trace loses that group of dimensions, never the others
            log.debug("trace %s: a dimension group failed: %r", getattr(trace, "trace_id", "?"), exc)
    return tuple(pairs.pairs)


# --- the input's language -----------------------------------------------------------------------------------------
def language_of(text: str) -> str | None:
    """The ISO 639-1 code of `text`'s language, "und" when undetermined (None: no language model). The identifier
    and its last classifications are `evaluators.language`'s: `response_language` classifies the same cut."""
    cut = text[:LANGUAGE_CHARS]
    if letters(cut) < MIN_LETTERS:
        return UNDETERMINED
    detected = detect_language(cut)
    if detected is None:
        return None
    return detected.language if detected.probability >= MIN_PROBABILITY else UNDETERMINED


__all__ = [
    "BUILT_IN",
    "MAX_VALUES",
    "TEMPLATE_ATTRIBUTES",
    "TENANT_ATTRIBUTES",
    "USER_ATTRIBUTES",
    "VERSION_ATTRIBUTES",
    "DimensionSettings",
    "dimensions_of",
    "language_of",
    "length_bucket",
    "template_id",
    "turn_bucket",
]
