"""Safe Milvus filter expressions, built from typed conditions and escaped values.

User values never become expression syntax. Strings are emitted as double-quoted literals in
which only backslash, quote, newline, carriage return and tab are escaped: Milvus's parser knows
exactly those escapes, rejects unicode, hex and octal ones, and accepts every other character raw
(control characters and non-ASCII included). Numbers are checked finite and in range; field
names and JSON keys are validated. Milvus Lite does not accept filter templates, so escaping is
the mechanism.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle_rag.errors import InvalidInputError

Scalar = str | int | float | bool

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_STRING = 4096
MAX_LIST = 1000
_INT64 = (-(2**63), 2**63 - 1)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True, slots=True)
class TypedMatch:
    """A JSON key whose value must be one of ``values``, of the same type. Milvus compares JSON
    loosely (``metadata["p"] == true`` matches 1 and 1.0, ``== 0`` matches false) and has no
    function that tells a boolean from a number, so the store checks the rows it returns."""

    field: str
    key: str
    values: tuple[Scalar, ...]

    def admits(self, row: Mapping[str, Any]) -> bool:
        document = row.get(self.field)
        if not isinstance(document, Mapping) or self.key not in document:
            return True  # not returned with the row: the expression alone decides
        return any(_same(document[self.key], value) for value in self.values)


def _same(stored: Any, wanted: Scalar) -> bool:
    return isinstance(stored, bool) == isinstance(wanted, bool) and stored == wanted


@dataclass(frozen=True, slots=True)
class Filter:
    """A boolean Milvus expression, built only by the functions of this module, and the typed
    matches Milvus cannot tell (checked on the rows it returns; kept under ``and`` only)."""

    expression: str
    typed: tuple[TypedMatch, ...] = ()

    def admits(self, row: Mapping[str, Any]) -> bool:
        """Whether a row the expression matched also has the types asked for."""
        return all(match.admits(row) for match in self.typed)

    def __and__(self, other: Filter) -> Filter:
        return all_of(self, other)

    def __or__(self, other: Filter) -> Filter:
        return any_of(self, other)


def _field(name: str) -> str:
    if not isinstance(name, str) or not _FIELD.match(name):
        raise InvalidInputError("filter field name is not a valid identifier", field=str(name)[:80])
    return name


def literal(value: Scalar) -> str:
    """Render one value as a Milvus literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidInputError("filter integer is out of the int64 range")
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("filter number must be finite")
        return repr(value)
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise InvalidInputError(f"filter string is longer than {MAX_STRING} characters")
        if not _valid_unicode(value):  # the store refuses it: every search list would fail
            raise InvalidInputError("filter string is not valid Unicode (a lone surrogate)")
        return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'
    raise InvalidInputError(
        f"filter values must be str, int, float or bool, not {type(value).__name__}"
    )


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _values(values: Iterable[Scalar]) -> list[Scalar]:
    items = list(values)
    if not items:
        raise InvalidInputError("filter value list must not be empty")
    if len(items) > MAX_LIST:
        raise InvalidInputError(f"filter value list is longer than {MAX_LIST}")
    return items


def _json_path(field: str, key: str) -> str:
    if not isinstance(key, str) or not key or len(key) > 128:
        raise InvalidInputError("JSON filter key must be a non-empty string of at most 128 chars")
    return f"{_field(field)}[{literal(key)}]"


def eq(field: str, value: Scalar) -> Filter:
    return Filter(f"{_field(field)} == {literal(value)}")


def ne(field: str, value: Scalar) -> Filter:
    return Filter(f"{_field(field)} != {literal(value)}")


def in_(field: str, values: Iterable[Scalar]) -> Filter:
    rendered = ", ".join(literal(v) for v in _values(values))
    return Filter(f"{_field(field)} in [{rendered}]")


def between(field: str, *, ge: int | float | None = None, le: int | float | None = None) -> Filter:
    if ge is None and le is None:
        raise InvalidInputError("a range filter needs a lower or an upper bound")
    parts = []
    if ge is not None:
        parts.append(f"{_field(field)} >= {literal(ge)}")
    if le is not None:
        parts.append(f"{_field(field)} <= {literal(le)}")
    return Filter(" and ".join(parts))


def json_eq(field: str, key: str, value: Scalar) -> Filter:
    return Filter(f"{_json_path(field, key)} == {literal(value)}", _typed(field, key, [value]))


def json_in(field: str, key: str, values: Iterable[Scalar]) -> Filter:
    # Milvus Lite rejects `in` on JSON paths: an OR of equalities means the same everywhere.
    path, items = _json_path(field, key), _values(values)
    expression = "(" + " or ".join(f"{path} == {literal(v)}" for v in items) + ")"
    return Filter(expression, _typed(field, key, items))


def _typed(field: str, key: str, values: Sequence[Scalar]) -> tuple[TypedMatch, ...]:
    """The typed match for values Milvus confuses (booleans, and the numbers 0 and 1)."""
    loose = any(isinstance(v, bool) or (not isinstance(v, str) and v in (0, 1)) for v in values)
    return (TypedMatch(field, key, tuple(values)),) if loose else ()


def json_between(
    field: str, key: str, *, ge: int | float | None = None, le: int | float | None = None
) -> Filter:
    if ge is None and le is None:
        raise InvalidInputError("a range filter needs a lower or an upper bound")
    path = _json_path(field, key)
    parts = [f"{path} >= {literal(ge)}"] if ge is not None else []
    parts += [f"{path} <= {literal(le)}"] if le is not None else []
    return Filter(" and ".join(parts))


def json_contains_any(field: str, key: str, values: Iterable[Scalar]) -> Filter:
    """``field[key]`` is a JSON list holding at least one of ``values``."""
    rendered = ", ".join(literal(v) for v in _values(values))
    return Filter(f"json_contains_any({_json_path(field, key)}, [{rendered}])")


def array_contains(field: str, value: Scalar) -> Filter:
    return Filter(f"array_contains({_field(field)}, {literal(value)})")


def array_contains_any(field: str, values: Iterable[Scalar]) -> Filter:
    rendered = ", ".join(literal(v) for v in _values(values))
    return Filter(f"array_contains_any({_field(field)}, [{rendered}])")


def all_of(*filters: Filter | None) -> Filter:
    parts = _present(filters)
    typed = tuple(match for f in parts for match in f.typed)
    return Filter(" and ".join(f"({f.expression})" for f in parts), typed) if parts else Filter("")


def any_of(*filters: Filter | None) -> Filter:
    parts = _present(filters)
    return Filter(" or ".join(f"({f.expression})" for f in parts)) if parts else Filter("")


def not_(condition: Filter) -> Filter:
    return Filter(f"not ({condition.expression})")


def _present(filters: Sequence[Filter | None]) -> list[Filter]:
    return [f for f in filters if f is not None and f.expression]
