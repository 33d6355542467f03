"""Dify's ``metadata_condition`` operators, checked against a passage's metadata.

Conditions are evaluated on each returned passage (so every operator, ``or`` included, means
exactly what Dify says); the ones that map onto Eagle-RAG's own filters (equality, lists and
numeric bounds, under ``and``) are also pushed down into the search so that matching passages
are not crowded out of the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eagle_rag.errors import InvalidInputError

# Passage fields that are row columns: checked after the search, never pushed down as metadata.
ROW_FIELDS = frozenset({"type", "level", "chunk_index", "page_nums", "image_id", "page", "path"})

Value = str | int | float | bool | list[str | int | float] | None


class Condition(BaseModel):
    """One Dify condition; ``name`` is one field (or, in older Dify, a list of alternatives)."""

    model_config = ConfigDict(extra="allow")

    name: str | list[str] = Field(min_length=1)
    comparison_operator: str
    value: Value = None

    @field_validator("comparison_operator")
    @classmethod
    def _known(cls, operator: str) -> str:
        operator = operator.strip().lower()
        if operator not in _OPERATORS:
            raise ValueError(f"unknown comparison_operator {operator!r}")
        return operator

    def names(self) -> list[str]:
        return [self.name] if isinstance(self.name, str) else list(self.name)


def matches(condition: Condition, metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` satisfies the condition (any of its names, for a list of names)."""
    test = _OPERATORS.get(condition.comparison_operator)
    if test is None:
        raise InvalidInputError(
            f"unknown comparison_operator {condition.comparison_operator!r}",
            field="metadata_condition",
        )
    return any(test(metadata.get(name), condition.value) for name in condition.names())


def pushed_down(conditions: list[Condition], *, columns: Iterable[str] = ()) -> dict[str, Any]:
    """The ``and`` conditions Eagle-RAG's ``metadata`` filter can apply inside the search;
    ``columns`` names more fields (besides ROW_FIELDS) that are not metadata keys."""
    skipped = ROW_FIELDS | set(columns)
    custom: dict[str, Any] = {}
    for c in conditions:
        if not isinstance(c.name, str) or c.name in custom:
            continue
        op, value = c.comparison_operator, c.value
        if c.name in skipped:  # columns of the row, not keys of its metadata
            continue
        listed = op == "in" and isinstance(value, list) and bool(value)
        if listed or (op == "is" and isinstance(value, str)):
            custom[c.name] = value
        elif op in ("=", "≥", ">=", ">", "≤", "<=", "<") and _number(value) is not None:
            number = _number(value)
            bound = {"=": {"gte": number, "lte": number}}.get(op)
            bound = bound or ({"gte": number} if op in ("≥", ">=", ">") else {"lte": number})
            custom[c.name] = bound
    return {"metadata": custom} if custom else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _compare(check: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def test(field: Any, value: Any) -> bool:
        a, b = _number(field), _number(value)
        return a is not None and b is not None and check(a, b)

    return test


# A date is an instant; a year (Core's ``year``: an integer 1000-9999) is all of that year.
Span = tuple[datetime, datetime]  # first and last instant


def _span(value: Any) -> Span | None:
    """The time ``value`` stands for. An integer 1000-9999 (or such a string) is a year, never
    a Unix timestamp: ``year=2025`` was read as 1970-01-01 00:33:45 and was "before
    2021-01-01"; another number is a Unix timestamp, as Dify sends dates."""
    if isinstance(value, bool):
        return None
    text = str(value).strip()
    # ASCII digits only: "²".isdigit() is true and int("²") raises; so would 5,000 digits.
    if len(text) == 4 and text.isascii() and text.isdigit() and int(text) >= 1000:
        year = int(text)
        return datetime(year, 1, 1), datetime(year + 1, 1, 1) - timedelta.resolution
    if isinstance(value, int | float):
        try:
            moment = datetime.fromtimestamp(value)
        except (OverflowError, OSError, ValueError):  # beyond any calendar: matches nothing
            return None
        return moment, moment
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        return None
    return moment, moment


def _before(a: Span, b: Span) -> bool:
    return a[0] < b[0]  # starts before the other starts: year 2024 is not before 2024-01-01


def _after(a: Span, b: Span) -> bool:
    return a[1] > b[1]  # ends after the other ends: year 2024 is after 2024-01-01


def _dates(check: Callable[[Span, Span], bool]) -> Callable[[Any, Any], bool]:
    def test(field: Any, value: Any) -> bool:
        a, b = _span(field), _span(value)
        return a is not None and b is not None and check(a, b)

    return test


def _contains(field: Any, value: Any) -> bool:
    if isinstance(field, list):
        return _text(value) in [_text(f) for f in field]
    return field is not None and _text(value) in _text(field)


def _in(field: Any, value: Any) -> bool:
    options = value if isinstance(value, list) else [value]
    return field is not None and _text(field) in [_text(o) for o in options]


def _empty(field: Any, value: Any) -> bool:
    return field is None or field == "" or field == []


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "contains": _contains,
    "not contains": lambda f, v: not _contains(f, v),
    "start with": lambda f, v: f is not None and _text(f).startswith(_text(v)),
    "end with": lambda f, v: f is not None and _text(f).endswith(_text(v)),
    "is": lambda f, v: f is not None and _text(f) == _text(v),
    "is not": lambda f, v: f is None or _text(f) != _text(v),
    "in": _in,
    "not in": lambda f, v: not _in(f, v),
    "empty": _empty,
    "not empty": lambda f, v: not _empty(f, v),
    "null": lambda f, v: f is None,
    "not null": lambda f, v: f is not None,
    "=": _compare(lambda a, b: a == b),
    "≠": _compare(lambda a, b: a != b),
    "!=": _compare(lambda a, b: a != b),
    ">": _compare(lambda a, b: a > b),
    "<": _compare(lambda a, b: a < b),
    "≥": _compare(lambda a, b: a >= b),
    ">=": _compare(lambda a, b: a >= b),
    "≤": _compare(lambda a, b: a <= b),
    "<=": _compare(lambda a, b: a <= b),
    "before": _dates(_before),
    "after": _dates(_after),
}
