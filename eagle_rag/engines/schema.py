"""Configuration schemas of components (the shape of the langbot-plugin SDK's manifests).

An engine declares a ``creation_schema`` (asked when a KB is created) and a
``retrieval_schema`` (adjustable per query). Each item has a name, an i18n label, a type among
integer / float / boolean / string / secret / select / text / json, whether it is required, a
default, options (for select) and ``show_if`` (a UI hint: shown only when another field has a
value). Validation fills defaults, coerces nothing silently, refuses unknown fields, and names
the field and the reason on every error. Secrets are never echoed back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from eagle_rag.errors import InvalidInputError

FieldType = Literal["integer", "float", "boolean", "string", "secret", "select", "text", "json"]
MASK = "********"
MAX_STRING = 10_000


@dataclass(frozen=True, slots=True)
class SchemaItem:
    name: str
    type: FieldType
    label: Mapping[str, str] = field(default_factory=dict)
    required: bool = False
    default: Any = None
    options: Sequence[Any] = ()
    show_if: Mapping[str, Any] | None = None
    description: Mapping[str, str] = field(default_factory=dict)
    minimum: float | None = None
    maximum: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["label"] = dict(self.label) or {"en_US": self.name}
        data["options"] = list(self.options)
        return {k: v for k, v in data.items() if v is not None and v != {}}


def validate_settings(
    schema: Sequence[SchemaItem], values: Mapping[str, Any] | None, *, what: str
) -> dict[str, Any]:
    """Checked settings with defaults filled; InvalidInputError names the field and reason."""
    given = dict(values or {})
    known = {item.name for item in schema}
    unknown = sorted(set(given) - known)
    if unknown:
        raise InvalidInputError(
            f"{what}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known)) or 'none'})",
            field=unknown[0],
        )
    result: dict[str, Any] = {}
    for item in schema:
        if item.name not in given or given[item.name] is None:
            if item.required and item.default is None:
                raise InvalidInputError(f"{what}: {item.name} is required", field=item.name)
            if item.default is not None:
                result[item.name] = item.default
            continue
        result[item.name] = _check(item, given[item.name], what)
    return result


def public_settings(schema: Sequence[SchemaItem], values: Mapping[str, Any]) -> dict[str, Any]:
    """Settings safe to show: every secret masked."""
    secrets = {item.name for item in schema if item.type == "secret"}
    return {k: (MASK if k in secrets and v else v) for k, v in values.items()}


def _check(item: SchemaItem, value: Any, what: str) -> Any:
    def bad(reason: str) -> InvalidInputError:
        return InvalidInputError(f"{what}: {item.name} {reason}", field=item.name)

    if item.type == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("must be an integer")
        _bounds(item, value, bad)
        return value
    if item.type == "float":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise bad("must be a finite number")
        _bounds(item, value, bad)
        return float(value)
    if item.type == "boolean":
        if not isinstance(value, bool):
            raise bad("must be true or false")
        return value
    if item.type in ("string", "secret", "text"):
        if not isinstance(value, str):
            raise bad("must be a string")
        if len(value) > MAX_STRING:
            raise bad(f"must be at most {MAX_STRING} characters")
        if item.required and not value.strip():
            raise bad("must not be empty")
        return value
    if item.type == "select":
        if value not in item.options:
            raise bad(f"must be one of {', '.join(map(str, item.options))}")
        return value
    if item.type == "json":
        if not isinstance(value, dict | list):
            raise bad("must be a JSON object or array")
        return value
    raise bad(f"has an unknown type {item.type!r}")


def _bounds(item: SchemaItem, value: float, bad: Any) -> None:
    if item.minimum is not None and value < item.minimum:
        raise bad(f"must be at least {item.minimum:g}")
    if item.maximum is not None and value > item.maximum:
        raise bad(f"must be at most {item.maximum:g}")
