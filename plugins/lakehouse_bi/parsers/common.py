"""Shared helpers of the readers: YAML loading with clear errors, dbt tests, ref() extraction."""

from __future__ import annotations

import re
from typing import Any

import yaml

from eagle_rag.errors import InvalidInputError
from plugins.lakehouse_bi.jinja import template_calls
from plugins.lakehouse_bi.model import as_list, clean

# One part of a table name: `backticked` (BigQuery: may hold a whole dotted path), "quoted",
# [bracketed], or bare.
_NAME_PART = re.compile(r'`([^`]*)`|"((?:[^"]|"")*)"|\[([^\]]*)\]|([^.`"\[\]]+)')

# libyaml's loader when PyYAML was built with it: about ten times faster on large files.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, filename: str) -> Any:
    """Parse YAML; InvalidInputError with the line and column of the first mistake."""
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InvalidInputError(
            f"malformed YAML{where}: {exc.problem or exc}", filename=filename
        ) from exc
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"malformed YAML: {exc}", filename=filename) from exc


def test_names(value: object) -> tuple[str, ...]:
    """dbt tests (``tests`` / ``data_tests``) as short readable names.

    ``unique`` stays ``unique``; ``{relationships: {to: ref('customers'), field: id}}``
    becomes ``relationships(customers.id)``; ``accepted_values`` lists its values.
    """
    names: list[str] = []
    for test in as_list(value):
        if isinstance(test, str):
            names.append(test)
        elif isinstance(test, dict) and test:
            name, args = next(iter(test.items()))
            names.append(_test_with_args(str(name), args))
    return tuple(names)


def _test_with_args(name: str, args: object) -> str:
    if not isinstance(args, dict):
        return name
    args = args.get("arguments", args) if isinstance(args.get("arguments"), dict) else args
    if name.endswith("relationships"):
        target = refs_in(str(args.get("to", "")))
        field = clean(args.get("field"))
        return f"{name}({'.'.join(x for x in (*target[:1], field) if x)})"
    if name.endswith("accepted_values"):
        values = ", ".join(clean(v) for v in as_list(args.get("values")))
        return f"{name}({values})"
    return name


def refs_in(text: str) -> tuple[str, ...]:
    """The relations ``ref()`` / ``source()`` calls in a Jinja string name (dbt lineage)."""
    if "{{" not in text and ("ref(" in text or "source(" in text):
        text = "{{ " + text + " }}"
    return template_calls(text).relations


def meta_value(node: dict[str, Any], key: str) -> str:
    """``meta.<key>`` from the node or its ``config`` (dbt allows both)."""
    for holder in (node, node.get("config") if isinstance(node.get("config"), dict) else {}):
        meta = holder.get("meta") if isinstance(holder, dict) else None
        if isinstance(meta, dict) and meta.get(key) is not None:
            value = meta[key]
            if isinstance(value, dict):
                return clean(value.get("name") or value.get("email"))
            return clean(value)
    return ""


def tags_of(node: dict[str, Any]) -> tuple[str, ...]:
    config = mapping(node.get("config"))
    tags = [*as_list(node.get("tags")), *as_list(config.get("tags"))]
    return tuple(dict.fromkeys(clean(t) for t in tags if clean(t)))


def mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def named_items(value: object) -> list[dict[str, Any]]:
    """A YAML list of objects that each have a ``name`` (others are skipped)."""
    return [v for v in as_list(value) if isinstance(v, dict) and clean(v.get("name"))]


def table_relation(table: str) -> str:
    """The relation a table name reads, without database, schema or quotes: BigQuery's
    backticked ``acme-prod.marts.fct_orders``, ``"ANALYTICS"."MARTS"."fct_orders"`` and
    ``marts.fct_orders`` all read ``fct_orders`` (a dot inside double quotes is the name's)."""
    parts: list[str] = []
    for backticked, quoted, bracketed, bare in _NAME_PART.findall(table.strip()):
        if backticked:
            parts.extend(backticked.split("."))
        elif quoted or bracketed:
            parts.append((quoted or bracketed).replace('""', '"'))
        else:
            parts.extend(p.strip() for p in bare.split("."))
    names = [p for p in parts if p]
    return names[-1] if names else ""
