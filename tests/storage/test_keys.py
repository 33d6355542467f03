from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.errors import InvalidInputError
from eagle_rag.storage.keys import object_key, validate_key, validate_part, validate_prefix


@pytest.mark.parametrize(
    "part",
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "a\x00b",
        "%2e%2e",
        "%2E%2E",
        "..%2F",
        "%252e%252e",
        "x\ny",
        " .. ",
        "a" * 201,
    ],
)
def test_unsafe_parts_are_refused(part: str) -> None:
    with pytest.raises(InvalidInputError):
        validate_part(part)


@pytest.mark.parametrize("part", ["report.pdf", "报告 2024.docx", "a..b", "...", "name%20x.txt"])
def test_ordinary_names_are_kept(part: str) -> None:
    assert validate_part(part) == part


def test_keys_start_with_the_namespace() -> None:
    assert object_key("lakehouse-bi", "kb", "d", "f.txt") == "lakehouse-bi/kb/d/f.txt"
    with pytest.raises(InvalidInputError):
        object_key("core")


def test_prefix_ends_with_a_separator() -> None:
    assert validate_prefix("core") == "core/"
    assert validate_prefix("core", "kb") == "core/kb/"


@given(st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=4))
def test_any_accepted_key_stays_inside_its_namespace(parts: list[str]) -> None:
    try:
        key = object_key(*parts)
    except InvalidInputError:
        return
    assert key.split("/")[0] == parts[0]
    assert len(key.split("/")) == len(parts)
    assert validate_key(key) == key
