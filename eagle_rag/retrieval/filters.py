"""Request filters → safe Milvus expressions.

A request's ``filters`` mapping accepts a closed set of keys, each built through the escaping
builder of :mod:`eagle_rag.index.filters`, so no user value ever becomes expression syntax:

- ``source_type``: ``"pdf"`` or a list (the document's format, see :func:`source_type_of`)
- ``year``: an integer, a list, or a range ``{"gte": 2019, "lte": 2023}``
- ``pages``: a range ``{"gte": 3, "lte": 5}`` or ``[3, 5]``: chunks on any of those pages
- ``type``: the chunk type (``text``, ``table``, ``list``, ``code``, ``section_summary``; a
  visual's ``image``, ``table`` or ``tile``)
- ``metadata``: ``{key: value | [values] | {"gte", "lte"}}`` on the document's custom metadata

Plugins may declare *filter fields* (``PluginContext.register_filter_field``): chunk metadata keys
a request can then name at the top level, ``{"object_type": "column"}`` meaning exactly
``{"metadata": {"object_type": "column"}}``. A ``list`` field holds a JSON list on each chunk
(tags, tests): ``{"tags": "finance"}`` or ``{"tags": ["a", "b"]}`` selects chunks whose list holds
any of the values, and so does the same under ``metadata``. A ``resolved`` field is one no chunk
stores as such, a fact only the plugin can turn into a condition on stored fields for the request's
scope (lineage across files: ``{"upstream": "stg_orders"}``): it takes one value or a list (any of
them), and the plugin's resolver, given the scope's knowledge bases, builds the condition. Core's
own keys above cannot be declared, so they always mean the same.

``pages`` and ``type`` are the two keys whose field differs between schemas (:class:`RowFields`):
a text chunk's ``page_nums`` array and ``type``, a visual's one ``page`` and ``chunk_type``; the
scope builds its filter on each (eagle_rag/retrieval/scope.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.index.filters import (
    MAX_LIST,
    Filter,
    Scalar,
    all_of,
    array_contains_any,
    between,
    eq,
    in_,
    json_between,
    json_contains_any,
    json_eq,
    json_in,
)
from eagle_rag.unicode_forms import nfc

MAX_PAGE_SPAN = 1000
METADATA_KEY = "metadata"
_RANGE_KEYS = frozenset({"gte", "lte"})
SCALAR_FIELD = "scalar"
LIST_FIELD = "list"
RESOLVED_FIELD = "resolved"
FIELD_KINDS = (SCALAR_FIELD, LIST_FIELD, RESOLVED_FIELD)

# A resolved field's plugin function: (the scope's KB names, the requested values) -> the
# condition on stored chunk fields. It raises InvalidInputError for a value it cannot take.
FieldResolver = Callable[[tuple[str, ...], tuple[Scalar, ...]], Filter]
# The same bound to one request's scope: (field name, values) -> condition.
ScopedResolver = Callable[[str, tuple[Scalar, ...]], Filter]


@dataclass(frozen=True, slots=True)
class RowFields:
    """Where a collection's rows keep their pages and chunk type: an array of the pages a text
    chunk spans (``listed``) or a visual's one page number."""

    pages: str
    type: str
    listed: bool


TEXT_ROWS = RowFields(pages="page_nums", type="type", listed=True)
VISUAL_ROWS = RowFields(pages="page", type="chunk_type", listed=False)


@dataclass(frozen=True, slots=True)
class FilterField:
    """A plugin's declared filter field: its kind, and for a resolved one its resolver."""

    kind: str
    resolve: FieldResolver | None = None


def scoped_resolver(fields: Mapping[str, FilterField], kb_names: Sequence[str]) -> ScopedResolver:
    """The resolved fields of ``fields`` bound to one scope's knowledge bases."""
    scope = tuple(kb_names)

    def resolve(name: str, values: tuple[Scalar, ...]) -> Filter:
        declared = fields.get(name)
        if declared is None or declared.resolve is None:
            raise InvalidInputError(f"filter {name!r} cannot be resolved here", filter=name)
        return declared.resolve(scope, values)

    return resolve


def build_metadata_filter(
    filters: Mapping[str, Any],
    fields: Mapping[str, str] | None = None,
    resolve: ScopedResolver | None = None,
    *,
    rows: RowFields = TEXT_ROWS,
) -> Filter:
    """One Filter for all of ``filters`` (AND); InvalidInputError names a bad key or value.

    ``fields`` are the plugins' declared filter fields (name -> ``scalar``, ``list`` or
    ``resolved``); ``resolve`` turns a resolved field's values into a condition for the
    request's scope (without it, a resolved field is refused, never dropped); ``rows`` are
    the fields ``pages`` and ``type`` are read from."""
    if not isinstance(filters, Mapping):
        raise InvalidInputError("filters must be an object")
    filters = nfc(filters)  # stored metadata and tags are NFC (ingest/upload_metadata.py)
    declared = fields or {}
    parts: list[Filter] = []
    for key, value in filters.items():
        builder = _BUILDERS.get(key)
        on_row = _ROW_BUILDERS.get(key)
        if on_row is not None:
            parts.append(on_row(value, rows))
        elif key == METADATA_KEY:
            parts.append(_custom(value, declared, resolve))
        elif builder is not None:
            parts.append(builder(value))
        elif key in declared:
            parts.append(_declared_field(str(key), declared[key], value, resolve))
        else:
            known = ", ".join(sorted({*_BUILDERS, *_ROW_BUILDERS, METADATA_KEY, *declared}))
            raise InvalidInputError(f"unknown filter {key!r}; known filters: {known}", filter=key)
    return all_of(*parts)


def is_core_filter(name: str) -> bool:
    """Core's own filter keys: no plugin may declare a field of that name."""
    return name in _BUILDERS or name in _ROW_BUILDERS or name == METADATA_KEY


def _declared_field(key: str, kind: str, value: Any, resolve: ScopedResolver | None) -> Filter:
    """A plugin field written at the top level: the same condition as under ``metadata``; for
    a list field, "holds any of these values"; a resolved field's condition from its plugin."""
    if kind == SCALAR_FIELD:
        return _json_condition(key, value)
    values = value if isinstance(value, list | tuple) else [value]
    if not values:
        raise InvalidInputError(f"filter {key!r} needs at least one value", filter=key)
    if len(values) > MAX_LIST:
        raise InvalidInputError(f"filter {key!r} takes at most {MAX_LIST} values", filter=key)
    scalars = tuple(_scalar(v, key) for v in values)
    if kind == LIST_FIELD:
        return json_contains_any("metadata", key, scalars)
    if resolve is None:
        raise InvalidInputError(f"filter {key!r} is not available here", filter=key)
    return resolve(key, scalars)


def _json_condition(key: str, value: Any) -> Filter:
    """A condition on ``metadata[key]``: equality, any-of, or a numeric range."""
    if isinstance(value, Mapping):
        bounds = _range(value, f"metadata filter {key!r}")
        return json_between("metadata", key, ge=bounds[0], le=bounds[1])
    if isinstance(value, list | tuple):
        return json_in("metadata", key, [_scalar(v, key) for v in value])
    return json_eq("metadata", key, _scalar(value, key))


def _source_type(value: Any) -> Filter:
    """The document's format by its short name, written as people write it (``"PDF"``,
    ``"md"``). Plugins store names of their own (``dbt``, ``lookml``), so a name is not
    checked against Core's formats."""
    if isinstance(value, list | tuple):
        return _json_condition("source_type", [_source_type_name(v) for v in value])
    return _json_condition("source_type", _source_type_name(value))


def _source_type_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(
            "source_type values must be non-empty strings", filter="source_type"
        )
    name = value.strip().lower()
    return _SOURCE_TYPE_ALIASES.get(name, name)


def _year(value: Any) -> Filter:
    if isinstance(value, bool) or not isinstance(value, int | list | tuple | Mapping):
        raise InvalidInputError("the year filter takes an integer, a list or a range")
    return _json_condition("year", value)


def _pages(value: Any, rows: RowFields) -> Filter:
    low: Any
    high: Any
    if isinstance(value, int) and not isinstance(value, bool):
        low = high = value  # one page
    elif isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
    elif isinstance(value, Mapping):
        low, high = _range(value, "pages filter")
    else:
        raise InvalidInputError(
            'the pages filter takes a page number, a range [first, last] or {"gte", "lte"}'
        )
    low = 1 if low is None else low
    if high is None:
        high = low + MAX_PAGE_SPAN - 1
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in (low, high)):
        raise InvalidInputError("page numbers must be integers")
    if not 1 <= low <= high or high - low >= MAX_PAGE_SPAN:
        raise InvalidInputError(
            f"the pages filter needs 1 <= first <= last and at most {MAX_PAGE_SPAN} pages"
        )
    if not rows.listed:  # one page per row: a range, never the pages spelled out
        return between(rows.pages, ge=low, le=high)
    # An array field has no "any element in range" test: the span's pages are listed.
    return array_contains_any(rows.pages, range(low, high + 1))


def _chunk_type(value: Any, rows: RowFields) -> Filter:
    """The same values on either schema: a ``table`` is a table chunk or a table visual; a
    kind only one side has (``code``, ``image``) matches nothing on the other."""
    if isinstance(value, list | tuple):
        return in_(rows.type, [_scalar(v, "type") for v in value])
    return eq(rows.type, _scalar(value, "type"))


def _custom(value: Any, declared: Mapping[str, str], resolve: ScopedResolver | None) -> Filter:
    """``{"metadata": {key: condition}}``; a plugin's declared field means here what it means
    at the top level (a ``list`` field: its list holds any of the values)."""
    if not isinstance(value, Mapping) or not value:
        raise InvalidInputError("the metadata filter takes a non-empty object of key: condition")
    return all_of(
        *(
            _declared_field(str(k), declared[k], v, resolve)
            if k in declared
            else _json_condition(str(k), v)
            for k, v in value.items()
        )
    )


# The file extensions people write for a format whose short name differs.
_SOURCE_TYPE_ALIASES = {"md": "markdown", "txt": "text", "htm": "html", "tsv": "csv"}

# METADATA_KEY is built apart (``_custom``, with the plugins' declared fields).
_BUILDERS: dict[str, Callable[[Any], Filter]] = {"source_type": _source_type, "year": _year}
# The keys whose field differs between the text and the visual rows.
_ROW_BUILDERS: dict[str, Callable[[Any, RowFields], Filter]] = {
    "pages": _pages,
    "type": _chunk_type,
}
ROW_FIELD_KEYS = frozenset(_ROW_BUILDERS)


def _scalar(value: Any, key: str) -> Scalar:
    if isinstance(value, str | int | float | bool):
        return value
    raise InvalidInputError(
        f"filter {key!r} values must be strings, numbers or booleans", filter=key
    )


def _range(value: Mapping[str, Any], what: str) -> tuple[Any, Any]:
    if not value or not set(value) <= _RANGE_KEYS:
        raise InvalidInputError(f'{what} range takes "gte" and/or "lte"')
    bounds = value.get("gte"), value.get("lte")
    for bound in bounds:
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
            raise InvalidInputError(f"{what} range bounds must be numbers")
    return bounds
