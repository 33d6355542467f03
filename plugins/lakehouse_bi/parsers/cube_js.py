"""Cube data models in JavaScript (``cube(`orders`, {...})``, ``view(`name`, {...})``).

The file is parsed by tree-sitter's JavaScript grammar, never run: each ``cube()`` / ``view()``
call whose name is a literal becomes the same shape Cube's YAML has (``measures: {count: {...}}``
→ ``[{"name": "count", ...}]``, ``sqlTable`` → ``sql_table``), then goes through the YAML reader.
Values are read as written: strings and template literals keep their text (``${CUBE}.amount``),
``sql: () => `...``` gives the template, anything computed (a variable, a call) keeps its source
text. Models built at run time (names from a loop, ``asyncModule``) cannot be read without
evaluating JavaScript; they are skipped, and a file of nothing else is refused with that reason.
"""

from __future__ import annotations

import re
from typing import Any

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from eagle_rag.errors import InvalidInputError
from plugins.lakehouse_bi.model import FileCatalog
from plugins.lakehouse_bi.parsers.cube import read_cube_yaml

CALLS = ("cube", "view")
# A cube's keyed collections: member name -> definition (the names are kept as written).
MEMBER_COLLECTIONS = (
    "measures",
    "dimensions",
    "joins",
    "segments",
    "pre_aggregations",
    "hierarchies",
)
_CALL = re.compile(r"\b(?:cube|view)\s*\(")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def is_cube_js(text: str) -> bool:
    return bool(_CALL.search(text))


def read_cube_js(text: str, filename: str) -> FileCatalog:
    """The cubes and views a Cube JavaScript model file defines literally."""
    tree = Parser(Language(tree_sitter_javascript.language())).parse(text.encode("utf-8"))
    if tree.root_node.has_error:
        raise InvalidInputError(_syntax_error(tree.root_node), filename=filename)
    found: dict[str, list[dict[str, Any]]] = {"cube": [], "view": []}
    for kind, name, body in _definitions(tree.root_node):
        found[kind].append({"name": name, **_definition(body, cube=kind == "cube")})
    if not found["cube"] and not found["view"]:
        raise InvalidInputError(
            "the JavaScript file defines no cube() or view() with a literal name and body "
            "(models generated at run time need a JavaScript runtime, which is not used here)",
            filename=filename,
        )
    return read_cube_yaml({"cubes": found["cube"], "views": found["view"]})


def _definitions(root: Node) -> list[tuple[str, str, Node]]:
    """Every ``cube(name, {...})`` / ``view(name, {...})`` call, wherever it is written."""
    out: list[tuple[str, str, Node]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        if node.type != "call_expression":
            continue
        callee, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if callee is None or args is None or _text(callee) not in CALLS:
            continue
        parts = args.named_children
        if len(parts) < 2 or parts[1].type != "object":
            continue
        name = _value(parts[0])
        if isinstance(name, str) and name and "${" not in name and parts[0].type != "identifier":
            out.append((_text(callee), name, parts[1]))
    return out


def _definition(body: Node, *, cube: bool) -> dict[str, Any]:
    """A cube's or view's object literal in YAML's shape (snake_case keys, named lists)."""
    value = _value(body)
    out: dict[str, Any] = {}
    for key, item in value.items():
        key = snake(key)
        if cube and key in MEMBER_COLLECTIONS and isinstance(item, dict):
            item = [{"name": name, **_snake_keys(d)} for name, d in item.items()]
        elif key == "cubes" and isinstance(item, list):
            item = [_snake_keys(c) for c in item]
        out[key] = item
    return out


def _snake_keys(value: Any) -> Any:
    return {snake(k): v for k, v in value.items()} if isinstance(value, dict) else {"sql": value}


def snake(key: str) -> str:
    """``sqlTable`` → ``sql_table``: Cube's JS and YAML spell the same keys two ways."""
    return _CAMEL.sub(r"_\1", key).lower()


def _value(node: Node) -> Any:
    """A literal as Python data; anything computed as its source text."""
    kind = node.type
    if kind in ("string", "template_string"):
        return _text(node)[1:-1]
    if kind == "number":
        try:
            number = float(_text(node))
        except ValueError:  # 0x1F, 1_000, 10n: keep as written
            return _text(node)
        return int(number) if number.is_integer() else number
    if kind in ("true", "false"):
        return kind == "true"
    if kind in ("null", "undefined"):
        return None
    if kind == "object":
        return dict(_pairs(node))
    if kind == "array":
        return [_value(c) for c in node.named_children if c.type != "comment"]
    if kind in ("arrow_function", "function_expression"):
        return _returned(node)
    if kind == "parenthesized_expression" and node.named_children:
        return _value(node.named_children[0])
    return _text(node)


def _pairs(node: Node) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    for child in node.named_children:
        if child.type == "shorthand_property_identifier":
            pairs.append((_text(child), _text(child)))
        elif child.type == "pair":
            key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
            if key is not None and value is not None:
                name = _value(key) if key.type == "string" else _text(key)
                pairs.append((str(name), _value(value)))
    return pairs


def _returned(function: Node) -> Any:
    """What ``() => `x``` or ``function () { return `x` }`` returns, when it is a literal."""
    body = function.child_by_field_name("body")
    if body is None:
        return _text(function)
    if body.type != "statement_block":
        return _value(body)
    for statement in body.named_children:
        if statement.type == "return_statement" and statement.named_children:
            return _value(statement.named_children[0])
    return _text(function)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _syntax_error(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            line, column = node.start_point
            what = f"missing {node.type}" if node.is_missing else "unexpected input"
            return f"JavaScript syntax error at line {line + 1}, column {column + 1}: {what}"
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return "JavaScript syntax error"
