"""Request filters → Milvus expressions: the closed key set, ranges, and hostile values."""

from __future__ import annotations

from typing import Any

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.retrieval.filters import VISUAL_ROWS, build_metadata_filter


@pytest.mark.parametrize(
    ("filters", "expression"),
    [
        ({}, ""),
        ({"source_type": "pdf"}, '(metadata["source_type"] == "pdf")'),
        (
            {"source_type": ["pdf", "docx"]},
            '((metadata["source_type"] == "pdf" or metadata["source_type"] == "docx"))',
        ),
        ({"source_type": " PDF "}, '(metadata["source_type"] == "pdf")'),  # as people write it
        (
            {"source_type": ["md", "Image"]},
            '((metadata["source_type"] == "markdown" or metadata["source_type"] == "image"))',
        ),
        ({"year": 2021}, '(metadata["year"] == 2021)'),
        ({"year": {"gte": 2019}}, '(metadata["year"] >= 2019)'),
        ({"pages": [2, 3]}, "(array_contains_any(page_nums, [2, 3]))"),
        ({"pages": {"gte": 4, "lte": 4}}, "(array_contains_any(page_nums, [4]))"),
        ({"pages": 4}, "(array_contains_any(page_nums, [4]))"),  # one page, not "[first, last]"
        ({"type": "table"}, '(type == "table")'),
        ({"metadata": {"team": "ops"}}, '((metadata["team"] == "ops"))'),
        (
            {"metadata": {"score": {"gte": 0.5, "lte": 1}}},
            '((metadata["score"] >= 0.5 and metadata["score"] <= 1))',
        ),
    ],
)
def test_each_filter_key_builds_its_expression(filters: dict[str, Any], expression: str) -> None:
    assert build_metadata_filter(filters).expression == expression


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"kb": "x"}, "unknown filter 'kb'"),
        ({"source_type": 3}, "source_type values must be non-empty strings"),
        ({"source_type": ["pdf", " "]}, "source_type values must be non-empty strings"),
        ({"year": "2021"}, "year filter takes"),
        ({"year": True}, "year filter takes"),
        ({"pages": [5, 2]}, "first <= last"),
        ({"pages": [0, 2]}, "first <= last"),
        ({"pages": [1, 5000]}, "at most 1000 pages"),
        ({"pages": "1-3"}, "pages filter takes"),
        ({"pages": [3]}, "a page number, a range"),
        ({"pages": True}, "a page number, a range"),
        ({"pages": 0}, "first <= last"),
        ({"pages": {"from": 1}}, "gte"),
        ({"metadata": {}}, "non-empty object"),
        ({"metadata": {"a": {"x": 1}}}, "gte"),
        ({"metadata": {"a": {"gte": "high"}}}, "bounds must be numbers"),
        ({"metadata": {"a": None}}, "strings, numbers or booleans"),
        ({"type": [{"nested": 1}]}, "strings, numbers or booleans"),
        ({"metadata": {"": 1}}, "JSON filter key"),
    ],
)
def test_bad_filters_name_the_key_and_reason(filters: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build_metadata_filter(filters)


def test_filters_must_be_an_object() -> None:
    with pytest.raises(InvalidInputError, match="must be an object"):
        build_metadata_filter(["year"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    ['" or 1==1 or "', 'x"] or metadata["y', "\\", "a\nb", "年份", "%_*"],
)
def test_hostile_values_stay_inside_one_literal(value: str) -> None:
    expression = build_metadata_filter({"metadata": {"team": value}}).expression
    # The value is one escaped literal: stripping it leaves exactly the fixed syntax.
    assert expression.startswith('((metadata["team"] == "') and expression.endswith('"))')
    inner = expression[len('((metadata["team"] == "') : -len('"))')]
    unescaped = inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    assert unescaped == value


@pytest.mark.parametrize(
    ("filters", "expression"),
    [
        ({"pages": [2, 3]}, "(page >= 2 and page <= 3)"),
        ({"pages": {"gte": 2}}, "(page >= 2 and page <= 1001)"),  # a range, not 1000 pages
        ({"type": "table"}, '(chunk_type == "table")'),
        ({"type": ["table", "image"]}, '(chunk_type in ["table", "image"])'),
        ({"year": 2021}, '(metadata["year"] == 2021)'),  # visuals carry the document's fields
    ],
)
def test_pages_and_type_are_read_from_the_visual_rows_fields(
    filters: dict[str, Any], expression: str
) -> None:
    assert build_metadata_filter(filters, rows=VISUAL_ROWS).expression == expression


@pytest.mark.parametrize("value", ["finance", ["finance", "ops"]])
def test_a_declared_field_means_the_same_under_metadata(value: Any) -> None:
    # docs/retrieval.md: a top-level plugin field means the same as under "metadata".
    declared = {"tags": "list", "object_type": "scalar"}
    for name, kind_value in (("tags", value), ("object_type", "column")):
        top = build_metadata_filter({name: kind_value}, declared)
        nested = build_metadata_filter({"metadata": {name: kind_value}}, declared)
        # the same condition; the metadata form only wraps it in one more pair of parentheses
        assert nested.expression.strip("()") == top.expression.strip("()")
