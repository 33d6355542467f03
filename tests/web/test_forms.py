"""Engine schemas as form fields, and posted form values back as typed settings."""

from __future__ import annotations

import json

import pytest

from eagle_rag.engines.schema import SchemaItem, validate_settings
from eagle_rag.errors import InvalidInputError
from eagle_rag.web.forms import form_fields, parse_form
from eagle_rag.web.i18n import label, pick_language

SCHEMA = [
    item.to_dict()
    for item in (
        SchemaItem("size", "integer", {"en_US": "Size", "zh_Hans": "大小"}, default=400),
        SchemaItem("ratio", "float", {"en_US": "Ratio"}, default=0.5, minimum=0, maximum=1),
        SchemaItem("ocr", "boolean", {"en_US": "OCR"}, default=True),
        SchemaItem("url", "string", {"en_US": "URL"}, required=True),
        SchemaItem("token", "secret", {"en_US": "Token"}, default="hidden"),
        SchemaItem("mode", "select", {"en_US": "Mode"}, options=("fast", "deep"), default="fast"),
        SchemaItem("depth", "integer", {"en_US": "Depth"}, show_if={"mode": "deep"}),
        SchemaItem("notes", "text", {"en_US": "Notes"}),
        SchemaItem("extra", "json", {"en_US": "Extra"}, default={"a": 1}),
        SchemaItem("level", "select", {"en_US": "Level"}, options=(1, 2, 3)),
    )
]


def test_every_item_type_becomes_a_field_with_its_default_and_flags() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA, "en")}
    assert fields["size"].input_type == "number" and fields["size"].value == "400"
    assert fields["ratio"].step == "any" and (fields["ratio"].minimum, fields["ratio"].maximum) == (
        "0",
        "1",
    )
    assert fields["ocr"].type == "boolean" and fields["ocr"].checked
    assert fields["url"].required and fields["url"].input_name == "creation__url"
    assert fields["token"].input_type == "password" and fields["token"].value == ""  # never shown
    assert fields["mode"].options == (("fast", "fast"), ("deep", "deep"))
    assert json.loads(fields["depth"].show_if) == {"mode": "deep"}
    assert fields["notes"].type == "text"
    assert json.loads(fields["extra"].value) == {"a": 1}
    assert form_fields(SCHEMA, "zh")[0].label == "大小"


def test_posted_values_are_typed_and_pass_the_engine_validation() -> None:
    form = {
        "creation__size": "128",
        "creation__ratio": "0.25",
        "creation__url": "https://kb.example",
        "creation__mode": "deep",
        "creation__depth": "3",
        "creation__extra": '{"b": [1, 2]}',
        "creation__level": "2",
    }
    parsed = parse_form(SCHEMA, form)
    assert parsed == {
        "size": 128,
        "ratio": 0.25,
        "ocr": False,  # an unticked box is sent as nothing: false
        "url": "https://kb.example",
        "mode": "deep",
        "depth": 3,
        "extra": {"b": [1, 2]},
        "level": 2,
    }
    checked = validate_settings([SchemaItem(**_item(i)) for i in SCHEMA], parsed, what="c")
    assert checked["token"] == "hidden" and checked["depth"] == 3


def test_fields_hidden_by_show_if_and_empty_optional_inputs_are_not_sent() -> None:
    parsed = parse_form(
        SCHEMA,
        {
            "creation__url": "u",
            "creation__mode": "fast",
            "creation__depth": "9",
            "creation__notes": "",
        },
    )
    assert "depth" not in parsed and "notes" not in parsed and "size" not in parsed


@pytest.mark.parametrize(
    ("name", "raw", "reason"),
    [
        ("size", "12.5", "must be an integer"),
        ("ratio", "half", "must be a number"),
        ("extra", "{oops", "is not valid JSON"),
        ("extra", "[" * 50_000 + "]" * 50_000, "is nested too deeply"),
        ("mode", "other", "is not one of the options"),
    ],
)
def test_a_bad_value_names_its_field(name: str, raw: str, reason: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_form(SCHEMA, {"creation__url": "u", f"creation__{name}": raw})
    assert caught.value.fields["field"] == name and reason in caught.value.message


@pytest.mark.parametrize(
    ("cookie", "header", "expected"),
    [
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        (None, "en-US,en;q=0.9,zh;q=0.8", "en"),
        (None, "fr-FR,zh-TW;q=0.5", "zh"),
        (None, "de, fr", "en"),
        (None, None, "en"),
        (None, "en;q=0.1, zh;q=0.9", "zh"),
        (None, "zh;q=0", "en"),
        ("en", "zh-CN", "en"),
        ("xx", "zh-CN", "zh"),
    ],
)
def test_language_from_cookie_then_accept_language(
    cookie: str | None, header: str | None, expected: str
) -> None:
    assert pick_language(cookie, header) == expected


def test_labels_fall_back_to_english_then_the_name() -> None:
    assert label({"en_US": "Size"}, "zh", "size") == "Size"
    assert label({}, "en", "size") == "size"


def _item(wire: dict[str, object]) -> dict[str, object]:
    item = dict(wire)
    item["options"] = tuple(item.get("options") or ())  # type: ignore[call-overload]
    return item
