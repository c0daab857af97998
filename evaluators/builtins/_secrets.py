"""The detectors of `secret_leak`: detect-secrets' regex plugins (their `analyze_string`, not its file scanner nor its
global settings), run only where a cheap prefilter saw what a credential of their kind must hold.

One linear-time (RE2) scan of the text for every enabled detector's trigger (a literal prefix such as `AKIA`,
`ghp_`, `xoxb-`, `PRIVATE KEY`, or the token's shape where it has no prefix) decides whether anything runs: most
texts hold none and cost that one scan. A detector whose trigger is found runs on a window around each hit (at most
`MAX_HITS` of them), never on the whole text: detect-secrets' patterns run on Python's backtracking engine, and a
window bounds what a crafted text can cost.

Left out of `DEFAULT_DETECTORS`, opt-in by name: `artifactory`, `cloudant`, `ibm_cloud_iam`, `ibm_cos_hmac` and
`softlayer` (keyword assignments or loose prefixes that match ordinary identifiers). Not offered: detect-secrets'
high-entropy string plugins (every hash, id and base64 blob of agent text looks random), its keyword plugin
(`password = ...` in prose and code samples) and its public-IP plugin (not a credential).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from ..linear_regex import compile_linear
from ..redaction import find_pii, mask_secret

MAX_HITS = 20  # trigger hits examined per detector and text
BEFORE, AFTER = 64, 2048  # characters of a window before and after a trigger hit


@dataclass(frozen=True, slots=True)
class SecretSpec:
    """A detector: detect-secrets' plugin class (module, class) or a `pii_leak` kind, and its trigger pattern."""

    plugin: tuple[str, str] | str
    trigger: str  # an RE2 pattern: what every credential of this kind holds
    prefixes: tuple[str, ...] = ()  # kept in a masked sample (a kind's public prefix, no secret)
    secret_group: bool = False  # the pattern's last group is the secret (an assignment, a URL's password)


def _literals(*words: str) -> str:
    return "|".join(re.escape(w) for w in words)


GITHUB = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
GITLAB = ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-", "glptt-", "glagent-")
SPECS: dict[str, SecretSpec] = {
    "aws_access_key": SecretSpec(
        ("aws", "AWSKeyDetector"),
        _literals("AKIA", "ASIA", "ABIA", "ACCA", "A3T") + "|(?i:aws)",
        ("AKIA", "ASIA"),
        secret_group=True,
    ),
    "azure_storage_key": SecretSpec(("azure_storage_key", "AzureStorageKeyDetector"), "AccountKey="),
    "basic_auth": SecretSpec(("basic_auth", "BasicAuthDetector"), r"://[^\s@/]+:[^\s@]+@", secret_group=True),
    "discord_token": SecretSpec(
        ("discord", "DiscordBotTokenDetector"), r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}"
    ),
    "github_token": SecretSpec(("github_token", "GitHubTokenDetector"), _literals(*GITHUB), GITHUB),
    "gitlab_token": SecretSpec(
        ("gitlab_token", "GitLabTokenDetector"), _literals(*GITLAB, "gloas-"), (*GITLAB, "gloas-")
    ),
    "jwt": SecretSpec(("jwt", "JwtTokenDetector"), "eyJ", ("eyJ",)),
    "mailchimp_key": SecretSpec(("mailchimp", "MailchimpDetector"), r"[0-9a-z]{32}-us[0-9]"),
    "npm_token": SecretSpec(("npm", "NpmDetector"), _literals(":_authToken="), secret_group=True),
    "openai_key": SecretSpec(("openai", "OpenAIDetector"), "T3BlbkFJ", ("sk-",)),
    "private_key": SecretSpec(("private_key", "PrivateKeyDetector"), _literals("PRIVATE KEY", "PuTTY-User-Key-File")),
    "pypi_token": SecretSpec(("pypi_token", "PypiTokenDetector"), "pypi-Ag", ("pypi-",)),
    "sendgrid_key": SecretSpec(("sendgrid", "SendGridDetector"), r"SG\.[a-zA-Z0-9_-]{22}\.", ("SG.",)),
    "slack_token": SecretSpec(
        ("slack", "SlackDetector"), r"(?i:xox[abposr]-)|(?i:hooks\.slack\.com)", ("xoxb-", "xoxp-", "xoxa-")
    ),
    "square_oauth": SecretSpec(("square_oauth", "SquareOAuthDetector"), "sq0csp-", ("sq0csp-",)),
    "stripe_key": SecretSpec(("stripe", "StripeDetector"), _literals("sk_live_", "rk_live_"), ("sk_live_", "rk_live_")),
    "telegram_token": SecretSpec(("telegram_token", "TelegramBotTokenDetector"), r"\d{8,10}:[0-9A-Za-z_-]{35}"),
    "twilio_key": SecretSpec(("twilio", "TwilioKeyDetector"), r"(?:AC|SK)[a-z0-9]{32}", ("AC", "SK")),
    # formats detect-secrets 1.5 does not know, found by pii_leak's detectors (evaluators.redaction)
    "github_fine_grained_token": SecretSpec("github_token", "github_pat_", ("github_pat_",)),
    "openai_project_key": SecretSpec("openai_key", _literals("sk-proj-", "sk-svcacct-", "sk-admin-")),
    "anthropic_key": SecretSpec("anthropic_key", "sk-ant-"),
    "google_api_key": SecretSpec("google_api_key", "AIza", ("AIza",)),
    # opt-in
    "artifactory": SecretSpec(("artifactory", "ArtifactoryDetector"), r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}"),
    "cloudant": SecretSpec(("cloudant", "CloudantDetector"), "(?i:cl)", secret_group=True),
    "ibm_cloud_iam": SecretSpec(("ibm_cloud_iam", "IbmCloudIamDetector"), "(?i:key|pwd|pass|token)", secret_group=True),
    "ibm_cos_hmac": SecretSpec(("ibm_cos_hmac", "IbmCosHmacDetector"), "(?i:secret)", secret_group=True),
    "softlayer": SecretSpec(("softlayer", "SoftlayerDetector"), "(?i:softlayer|sl)", secret_group=True),
}
OPT_IN = ("artifactory", "cloudant", "ibm_cloud_iam", "ibm_cos_hmac", "softlayer")
DEFAULT_DETECTORS: tuple[str, ...] = tuple(k for k in SPECS if k not in OPT_IN)

_plugins: dict[tuple[str, str], Any] = {}
_plugins_lock = threading.Lock()


def _plugin(ref: tuple[str, str]) -> Any:
    """One detect-secrets plugin instance per process (imported on first use: it imports requests)."""
    plugin = _plugins.get(ref)
    if plugin is None:
        with _plugins_lock:
            plugin = _plugins.get(ref)
            if plugin is None:
                import importlib

                module = importlib.import_module(f"detect_secrets.plugins.{ref[0]}")
                plugin = _plugins[ref] = getattr(module, ref[1])()
    return plugin


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A credential found: its kind and a masked sample (never the value)."""

    kind: str
    sample: str


def _sample(kind: str, match: Any, spec: SecretSpec) -> str:
    """A masked sample of a match: the secret group hidden, else the value's public prefix and last characters."""
    whole = match.group(0)
    if kind == "private_key":
        return f"{whole} (key body hidden)"  # the plugin's match is the header: no key material
    group = match.lastindex if spec.secret_group else None
    if group:
        start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
        return (whole[:start][-30:] + "****" + whole[end:][:10]).strip()
    prefix = next((p for p in spec.prefixes if whole.startswith(p)), "")
    return mask_secret(whole, prefix)


class SecretScanner:
    """The detectors named in `kinds`, with their one combined prefilter."""

    def __init__(self, kinds: list[str] | tuple[str, ...]) -> None:
        self.kinds = tuple(dict.fromkeys(kinds))
        self._triggers = {kind: compile_linear(SPECS[kind].trigger) for kind in self.kinds}
        joined = "|".join(f"(?:{SPECS[kind].trigger})" for kind in self.kinds)
        self._any = compile_linear(joined) if joined else None

    def scan(self, text: str) -> list[SecretFinding]:
        """The credentials in `text`, each (kind, value) once, in detector order."""
        if self._any is None or not text or self._any.search(text) is None:
            return []
        found: dict[tuple[str, str], SecretFinding] = {}
        for kind in self.kinds:
            spec = SPECS[kind]
            for window in self._windows(kind, text):
                for value, sample in self._matches(kind, spec, window):
                    if (kind, value) not in found:
                        found[(kind, value)] = SecretFinding(kind, sample)
        return list(found.values())

    def _windows(self, kind: str, text: str) -> list[str]:
        """The stretches of `text` around the hits of `kind`'s trigger (overlapping ones merged)."""
        spans: list[list[int]] = []
        for number, match in enumerate(self._triggers[kind].finditer(text)):
            if number >= MAX_HITS:
                break
            start, end = max(match.start() - BEFORE, 0), match.start() + AFTER
            if spans and start <= spans[-1][1]:
                spans[-1][1] = end
            else:
                spans.append([start, end])
        return [text[start:end] for start, end in spans]

    @staticmethod
    def _matches(kind: str, spec: SecretSpec, window: str) -> list[tuple[str, str]]:
        """(value, masked sample) of each match in `window`. The plugin's `denylist` regexes are run rather than its
        `analyze_string`, which yields capture groups (GitHub's yields "ghp"), where a sample needs the whole match;
        the JWT plugin's own check (each part base64 JSON) is kept."""
        if isinstance(spec.plugin, str):
            return [(window[f.start : f.end], f.sample) for f in find_pii(window, [spec.plugin])]
        plugin = _plugin(spec.plugin)
        check = getattr(plugin, "is_formally_valid", None)
        out = []
        for regex in plugin.denylist:
            for match in regex.finditer(window):
                if match.group(0) and (check is None or check(match.group(0))):
                    out.append((match.group(0), _sample(kind, match, spec)))
        return out


__all__ = ["DEFAULT_DETECTORS", "OPT_IN", "SPECS", "SecretFinding", "SecretScanner"]
