"""Engine ``creation_schema`` items as HTML form fields, and posted form values back as settings.

Items arrive in their wire shape (``GET /engines``): ``name, type, label, required, default,
options, show_if, description, minimum, maximum``. ``show_if`` maps another field's name to the
value (or list of values) it must have for this field to be shown; hidden fields are not sent.
The posted values are typed here and then checked by the engine's own validation, which names the
field on every error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eagle_rag.errors import InvalidInputError
from eagle_rag.web.i18n import label

PREFIX = "creation__"
INPUT_TYPES = {"integer": "number", "float": "number", "string": "text", "secret": "password"}


@dataclass(frozen=True, slots=True)
class FormField:
    """One rendered input: what the template needs, already localised."""

    name: str
    input_name: str
    type: str
    label: str
    help: str
    required: bool
    value: str
    checked: bool
    options: tuple[tuple[str, str], ...]
    show_if: str  # JSON for the page script, "" when always shown
    input_type: str
    step: str
    minimum: str
    maximum: str


def form_fields(schema: Sequence[Mapping[str, Any]], language: str) -> list[FormField]:
    """The fields to render for a schema, defaults filled in."""
    return [_field(item, language) for item in schema]


def _field(item: Mapping[str, Any], language: str) -> FormField:
    kind = str(item.get("type", "string"))
    default = item.get("default")
    if kind == "json" and default is not None:
        value = json.dumps(default, ensure_ascii=False)
    elif kind == "boolean" or default is None or kind == "secret":
        value = ""
    else:
        value = str(default)
    options = tuple((str(o), str(o)) for o in item.get("options") or ())
    show_if = item.get("show_if")
    return FormField(
        name=str(item["name"]),
        input_name=PREFIX + str(item["name"]),
        type=kind,
        label=label(item.get("label") or {}, language, str(item["name"])),
        help=label(item.get("description") or {}, language, ""),
        required=bool(item.get("required")),
        value=value,
        checked=kind == "boolean" and default is True,
        options=options,
        show_if=json.dumps(show_if) if show_if else "",
        input_type=INPUT_TYPES.get(kind, "text"),
        step="any" if kind == "float" else "1",
        minimum="" if item.get("minimum") is None else f"{item['minimum']:g}",
        maximum="" if item.get("maximum") is None else f"{item['maximum']:g}",
    )


def parse_form(schema: Sequence[Mapping[str, Any]], form: Mapping[str, str]) -> dict[str, Any]:
    """Typed settings from posted values; InvalidInputError names the field that is wrong.

    Empty optional inputs are left out so the engine's defaults apply; fields whose ``show_if``
    does not hold are left out as well (the page hid them).
    """
    values: dict[str, Any] = {}
    for item in schema:
        name = str(item["name"])
        raw = form.get(PREFIX + name)
        if item.get("type") == "boolean":
            values[name] = raw in ("on", "true", "1")
            continue
        if raw is None or raw.strip() == "":
            continue
        values[name] = _typed(item, raw)
    return {name: v for name, v in values.items() if _shown(_item(schema, name), values)}


def _typed(item: Mapping[str, Any], raw: str) -> Any:
    name, kind = str(item["name"]), item.get("type")
    text = raw.strip()
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise InvalidInputError(
                f"creation_settings: {name} must be an integer", field=name
            ) from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise InvalidInputError(
                f"creation_settings: {name} must be a number", field=name
            ) from None
    if kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"creation_settings: {name} is not valid JSON ({exc.msg})", field=name
            ) from None
        except RecursionError:  # json's own guard against deep nesting
            raise InvalidInputError(
                f"creation_settings: {name} is nested too deeply", field=name
            ) from None
    if kind == "select":
        for option in item.get("options") or ():
            if str(option) == raw:
                return option
        raise InvalidInputError(f"creation_settings: {name} is not one of the options", field=name)
    return raw  # string, secret, text: kept as typed (whitespace matters in some secrets)


def _item(schema: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    return next(i for i in schema if i["name"] == name)


def _shown(item: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    condition = item.get("show_if") or {}
    for other, wanted in condition.items():
        allowed = wanted if isinstance(wanted, list) else [wanted]
        if values.get(other) not in allowed:
            return False
    return True
