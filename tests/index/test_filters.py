from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.errors import InvalidInputError
from eagle_rag.index import filters as f


def _unquote(rendered: str) -> str:
    """Invert the builder's escaping, as Milvus's parser does."""
    assert rendered[0] == rendered[-1] == '"'
    body, out, i = rendered[1:-1], [], 0
    escapes = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}
    while i < len(body):
        if body[i] == "\\":
            out.append(escapes[body[i + 1]])
            i += 2
        else:
            assert body[i] not in '"\n\r\t', "unescaped delimiter"
            out.append(body[i])
            i += 1
    return "".join(out)


@given(st.text(max_size=200))
def test_string_literals_round_trip(value: str) -> None:
    assert _unquote(f.literal(value)) == value


def test_literals_of_each_type() -> None:
    assert f.literal(True) == "true" and f.literal(False) == "false"
    assert f.literal(42) == "42" and f.literal(-1.5) == "-1.5"
    assert f.literal('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


@pytest.mark.parametrize("value", [math.nan, math.inf, 2**63, None, b"bytes", [1], "x" * 4097])
def test_unsafe_values_are_refused(value: object) -> None:
    with pytest.raises(InvalidInputError):
        f.literal(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "1abc", "a b", "a)or(1", 'x"', "a" * 65, "kb_name; drop"])
def test_field_names_are_identifiers(name: str) -> None:
    with pytest.raises(InvalidInputError, match="field name"):
        f.eq(name, "x")


def test_expressions() -> None:
    assert f.eq("kb_name", "docs").expression == 'kb_name == "docs"'
    assert f.in_("id", ["a", "b"]).expression == 'id in ["a", "b"]'
    assert f.between("page", ge=1, le=3).expression == "page >= 1 and page <= 3"
    assert f.json_eq("metadata", 'we"ird', 1).expression == 'metadata["we\\"ird"] == 1'
    assert f.json_in("metadata", "year", [2020, 2021]).expression == (
        '(metadata["year"] == 2020 or metadata["year"] == 2021)'
    )
    assert f.array_contains_any("page_nums", [1, 2]).expression == (
        "array_contains_any(page_nums, [1, 2])"
    )
    combined = f.eq("a", 1) & (f.eq("b", 2) | f.eq("c", 3))
    assert combined.expression == "(a == 1) and ((b == 2) or (c == 3))"
    assert f.not_(f.eq("a", 1)).expression == "not (a == 1)"
    assert f.all_of(None, f.Filter("")).expression == ""


def test_lists_are_bounded_and_non_empty() -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        f.in_("id", [])
    with pytest.raises(InvalidInputError, match="longer than"):
        f.in_("id", [str(i) for i in range(f.MAX_LIST + 1)])
    with pytest.raises(InvalidInputError, match="bound"):
        f.between("page")
