"""The dimension codes (store/dimension_codes.py) as properties: any pairs pack and read back (text and codes
agree, each code named from the text), any stored text or blob decodes without raising, and cleaned values are
bounded and free of the separators."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from monitor.explain.rows import DimensionRows
from monitor.store.dimension_codes import (
    DIMENSION_BITS,
    MAX_PAIRS,
    MAX_VALUE_CHARS,
    PAIR,
    SEPARATOR,
    VALUE_BITS,
    clean_value,
    code_of,
    codes_of,
    dimension_code,
    named,
    packed,
    unpacked_text,
)

names = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40)
values = st.text(max_size=300).map(clean_value)


@given(st.lists(st.tuples(names, values), max_size=80))
def test_any_pairs_pack_and_read_back(pairs: list[tuple[str, str]]) -> None:
    blob, text = packed(pairs)
    kept = list(dict.fromkeys(pairs))[:MAX_PAIRS]
    assert unpacked_text(text) == kept  # names without control characters, values cleaned: no separator in either
    assert list(codes_of(blob)) == [code_of(d, v) for d, v in kept]
    for (dimension, value), code in zip(kept, codes_of(blob), strict=True):
        assert code >> VALUE_BITS == dimension_code(dimension) < 2**DIMENSION_BITS
        assert (
            named(code, text) == (dimension, value) or code_of(*kept[[c for c in codes_of(blob)].index(code)]) == code
        )


@given(st.text(max_size=500), st.binary(max_size=200))
def test_any_stored_text_or_blob_decodes_without_raising(text: str, blob: bytes) -> None:
    assert all(isinstance(d, str) for d, _ in unpacked_text(text))
    assert len(codes_of(blob)) == len(blob) // 8
    rows = DimensionRows.of([blob, None, blob], [text, None, text])
    assert rows.n == 3 and len(rows.codes) == 2 * (len(blob) // 8) and rows.row_of_codes().size == len(rows.codes)


@given(st.text(max_size=1000))
def test_a_cleaned_value_is_bounded_and_holds_no_separator(value: str) -> None:
    cleaned = clean_value(value)
    assert len(cleaned) <= MAX_VALUE_CHARS and PAIR not in cleaned and SEPARATOR not in cleaned
    assert cleaned == cleaned.strip()
