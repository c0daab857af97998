"""Labelled sets for the free builtin evaluators' precision and recall, built from data that ships inside
installed packages (no network, nothing read outside the repository and the venv):

- `language_pairs`: (question, answer) pairs of faker's per-locale lorem word lists (real words of each
  language: `faker/providers/lorem/<locale>/__init__.py`), drawn with a fixed seed; the same locale for both →
  expected pass, two locales → expected fail (the positive class).
- `sentiment_conversations`: user turns of faker's en_US words plus words of the AFINN-165 lexicon (`afinn`
  package, `afinn/data/AFINN-en-165.txt`: hand-rated valences by F. Å. Nielsen, independent of VADER's); a
  conversation is labelled negative (the positive class) when AFINN's scores of its user turns, recency-weighted,
  end below 0.
- `secret_texts`: prose lines of the venv's licence files (`*.dist-info/LICENSE*`, `*.dist-info/licenses/*`);
  positives hold one credential in a provider's documented format (AWS's example key id `AKIAIOSFODNN7EXAMPLE`, or
  the prefix and length of GitHub, Slack, Stripe, GitLab, npm, SendGrid, PyPI and OpenAI tokens, PEM private key
  headers, JWTs, passwords in URLs) with a random body; negatives hold look-alikes that are not credentials: hex
  digests, UUIDs, git SHAs, base64 of prose, version strings and URLs without a password.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import random
import site
import uuid
from pathlib import Path

LOCALES = ("en_US", "de_DE", "fr_FR", "it_IT", "es_ES", "nl_NL", "pl_PL", "ru_RU", "cs_CZ", "da_DK", "el_GR", "uk_UA")
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def words_of(locale: str) -> tuple[str, ...]:
    """faker's lorem word list of `locale`."""
    return tuple(importlib.import_module(f"faker.providers.lorem.{locale}").Provider.word_list)


def _sentence(rng: random.Random, words: tuple[str, ...], count: int) -> str:
    return " ".join(rng.choice(words) for _ in range(count)).capitalize() + "."


def language_pairs(per_pair: int = 4, seed: int = 11) -> list[tuple[str, str, bool]]:
    """(question, answer, mismatched): `per_pair` pairs for every ordered pair of LOCALES (mismatched) and
    `per_pair × (len(LOCALES) - 1)` same-language pairs per locale, so both classes are the same size."""
    rng = random.Random(seed)
    lists = {locale: words_of(locale) for locale in LOCALES}
    pairs = []
    for asked in LOCALES:
        for answered in LOCALES:
            count = per_pair if asked != answered else per_pair * (len(LOCALES) - 1)
            for _ in range(count):
                question = _sentence(rng, lists[asked], rng.randint(8, 14))
                answer = " ".join(_sentence(rng, lists[answered], rng.randint(6, 12)) for _ in range(3))
                pairs.append((question, answer, asked != answered))
    return pairs


def afinn_lexicon() -> dict[str, int]:
    """AFINN-165: word → valence (-5..5), as the afinn package ships it."""
    import afinn

    path = Path(afinn.__file__).parent / "data" / "AFINN-en-165.txt"
    lexicon = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, value = line.rpartition("\t")
        if word and " " not in word:
            lexicon[word] = int(value)
    return lexicon


def weighted(scores: list[float]) -> float:
    """Scores weighted 1, 2, ... n (the last most), as the label's definition of how a conversation ends."""
    return sum((i + 1) * s for i, s in enumerate(scores)) / sum(range(1, len(scores) + 1))


def sentiment_conversations(count: int = 400, seed: int = 5) -> list[tuple[list[str], bool]]:
    """(user turns, ends negative): 2–4 turns each of 5–12 neutral words and 1–2 AFINN words of one sign (|valence|
    ≥ 2); labelled by AFINN's valences of the turns (their sum per turn, recency-weighted) ending below 0. Neutral
    filler: faker's en_US words absent from AFINN."""
    rng = random.Random(seed)
    lexicon = afinn_lexicon()
    positive = sorted(w for w, v in lexicon.items() if v >= 2)
    negative = sorted(w for w, v in lexicon.items() if v <= -2)
    filler = [w for w in words_of("en_US") if w not in lexicon]
    out = []
    while len(out) < count:
        turns, valences = [], []
        for _ in range(rng.randint(2, 4)):
            pool = rng.choice((positive, negative))
            chosen = [rng.choice(pool) for _ in range(rng.randint(1, 2))]
            words = [rng.choice(filler) for _ in range(rng.randint(5, 12))]
            for word in chosen:
                words.insert(rng.randrange(len(words) + 1), word)
            turns.append(" ".join(words).capitalize() + ".")
            valences.append(sum(lexicon[w] for w in chosen))
        ending = weighted(valences)
        if ending != 0:
            out.append((turns, ending < 0))
    return out


def prose_lines(limit: int = 600) -> list[str]:
    """Lines of 40+ characters from the licence files of the venv's installed distributions, in path order."""
    lines: list[str] = []
    for root in site.getsitepackages():
        paths = sorted(Path(root).glob("*.dist-info/LICENSE*")) + sorted(Path(root).glob("*.dist-info/licenses/*"))
        for path in paths:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                lines += [" ".join(line.split()) for line in text.splitlines() if len(line.strip()) >= 40]
    return list(dict.fromkeys(lines))[:limit]


def _body(rng: random.Random, length: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def credential(rng: random.Random, number: int) -> str:
    """The `number`-th documented credential format, with a random body."""
    upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    forms = [
        lambda: "AKIAIOSFODNN7EXAMPLE" if rng.random() < 0.2 else "AKIA" + _body(rng, 16, upper),
        lambda: rng.choice(("ghp_", "gho_", "ghs_", "ghu_")) + _body(rng, 36),
        lambda: "github_pat_" + _body(rng, 22) + "_" + _body(rng, 59),
        lambda: f"xoxb-{rng.randint(10**9, 10**12)}-{rng.randint(10**9, 10**12)}-{_body(rng, 24).lower()}",
        lambda: "sk_live_" + _body(rng, 24),
        lambda: "-----BEGIN " + rng.choice(("RSA ", "EC ", "OPENSSH ", "")) + "PRIVATE KEY-----",
        lambda: ".".join((_b64url({"alg": "HS256"}), _b64url({"sub": str(rng.randint(1, 10**6))}), _body(rng, 43))),
        lambda: f"https://{_body(rng, 6).lower()}:{_body(rng, 12)}@db.example.com/app",
        lambda: "glpat-" + _body(rng, 20),
        lambda: "SG." + _body(rng, 22) + "." + _body(rng, 43),
        lambda: "sk-proj-" + _body(rng, 48),
        lambda: "AIza" + _body(rng, 35),
    ]
    return forms[number % len(forms)]()


def look_alike(rng: random.Random, line: str, number: int) -> str:
    """The `number`-th kind of random-looking string that is no credential."""
    forms = [
        lambda: hashlib.sha256(line.encode()).hexdigest(),
        lambda: hashlib.sha1(line.encode()).hexdigest(),  # a git SHA
        lambda: hashlib.md5(line.encode()).hexdigest(),
        lambda: str(uuid.UUID(int=rng.getrandbits(128))),
        lambda: base64.b64encode(line.encode()).decode(),
        lambda: f"v{rng.randint(0, 9)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}",
        lambda: f"https://example.com/{_body(rng, 8).lower()}/{hashlib.sha1(line.encode()).hexdigest()[:7]}",
        lambda: "order " + _body(rng, 12, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    ]
    return forms[number % len(forms)]()


def secret_texts(seed: int = 3) -> list[tuple[str, bool]]:
    """(text, holds a credential): each licence line once with a look-alike (negative) and, every second line,
    once more with a credential (positive)."""
    rng = random.Random(seed)
    out = []
    for number, line in enumerate(prose_lines()):
        cut = rng.randrange(len(line))
        out.append((f"{line[:cut]} {look_alike(rng, line, number)} {line[cut:]}", False))
        if number % 2 == 0:
            out.append((f"{line[:cut]} {credential(rng, number // 2)} {line[cut:]}", True))
    return out


def precision_recall(predicted: list[bool], actual: list[bool]) -> tuple[float, float]:
    """Precision and recall of the positive class."""
    true_positive = sum(p and a for p, a in zip(predicted, actual))
    flagged, positives = sum(predicted), sum(actual)
    return (true_positive / flagged if flagged else 1.0), (true_positive / positives if positives else 1.0)
