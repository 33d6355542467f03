"""Component schemas: defaults, types, bounds, unknown fields, secrets never echoed."""

from __future__ import annotations

from typing import Any

import pytest

from eagle_rag.engines.schema import MASK, SchemaItem, public_settings, validate_settings
from eagle_rag.errors import InvalidInputError

SCHEMA = (
    SchemaItem("base_url", "string", required=True),
    SchemaItem("api_key", "secret", required=True),
    SchemaItem("top_k", "integer", default=5, minimum=1, maximum=50),
    SchemaItem("threshold", "float", default=0.0, minimum=0, maximum=1),
    SchemaItem("rerank", "boolean", default=False),
    SchemaItem("method", "select", default="hybrid", options=("hybrid", "semantic")),
    SchemaItem("extra", "json"),
    SchemaItem("notes", "text"),
)
GOOD = {"base_url": "http://x", "api_key": "k"}


def test_defaults_are_filled_and_values_kept() -> None:
    assert validate_settings(SCHEMA, {**GOOD, "threshold": 1}, what="s") == {
        **GOOD,
        "top_k": 5,
        "threshold": 1.0,
        "rerank": False,
        "method": "hybrid",
    }


@pytest.mark.parametrize(
    ("values", "field", "reason"),
    [
        ({"api_key": "k"}, "base_url", "is required"),
        ({**GOOD, "api_key": "  "}, "api_key", "must not be empty"),
        ({**GOOD, "top_k": "5"}, "top_k", "must be an integer"),
        ({**GOOD, "top_k": True}, "top_k", "must be an integer"),
        ({**GOOD, "top_k": 99}, "top_k", "must be at most 50"),
        ({**GOOD, "threshold": float("nan")}, "threshold", "finite number"),
        ({**GOOD, "threshold": -0.5}, "threshold", "at least 0"),
        ({**GOOD, "rerank": "yes"}, "rerank", "true or false"),
        ({**GOOD, "method": "magic"}, "method", "must be one of hybrid, semantic"),
        ({**GOOD, "extra": "{}"}, "extra", "JSON object or array"),
        ({**GOOD, "notes": 3}, "notes", "must be a string"),
        ({**GOOD, "colour": "red"}, "colour", "unknown field 'colour'"),
    ],
)
def test_errors_name_the_field_and_reason(values: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason) as caught:
        validate_settings(SCHEMA, values, what="creation_settings")
    assert caught.value.fields["field"] == field
    assert caught.value.message.startswith("creation_settings:")


def test_secrets_are_masked_and_items_describe_themselves() -> None:
    assert public_settings(SCHEMA, {**GOOD, "top_k": 3}) == {
        "base_url": "http://x",
        "api_key": MASK,
        "top_k": 3,
    }
    item = SchemaItem("method", "select", {"zh_Hans": "方式"}, options=("a", "b"), default="a")
    assert item.to_dict() == {
        "name": "method",
        "type": "select",
        "label": {"zh_Hans": "方式"},
        "required": False,
        "default": "a",
        "options": ["a", "b"],
    }
