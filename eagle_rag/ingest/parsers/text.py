"""Plain text, Markdown and JSON parsers."""

from __future__ import annotations

import json
import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import JSON, MARKDOWN, TEXT, decode_text
from eagle_rag.ingest.parsers.base import ParseContext, markdown_table, result
from eagle_rag.plugins.payloads import ParseResult, TextSection

_PARAGRAPHS = re.compile(r"\n\s*\n")


def _text(context: ParseContext) -> str:
    text = decode_text(context.data)
    if text is None:
        raise InvalidInputError("the file is not decodable text", filename=context.filename)
    if not text.strip():
        raise InvalidInputError("the file has no text", filename=context.filename)
    return text.replace("\r\n", "\n").replace("\r", "\n")


class PlainTextParser:
    name = "text"
    supported_mime_types: tuple[str, ...] = (TEXT,)

    def parse(self, context: ParseContext) -> ParseResult:
        paragraphs = [p.strip() for p in _PARAGRAPHS.split(_text(context))]
        return result(TextSection(content=p) for p in paragraphs if p)


class MarkdownParser:
    """CommonMark plus pipe tables: headings open sections; lists, code and tables stay blocks."""

    name = "markdown"
    supported_mime_types: tuple[str, ...] = (MARKDOWN,)

    def __init__(self) -> None:
        self._md = MarkdownIt("commonmark").enable("table")

    def parse(self, context: ParseContext) -> ParseResult:
        text, title = _front_matter(_text(context))
        lines = text.split("\n")
        tokens = self._md.parse(text)
        sections: list[TextSection] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.level != 0 or token.nesting == -1:
                i += 1
                continue
            end = _close(tokens, i) if token.nesting == 1 else i
            block = _block(token, tokens[i : end + 1], lines)
            if block is not None:
                sections.append(block)
            i = end + 1
        if not sections:
            raise InvalidInputError("the file has no text", filename=context.filename)
        return result(sections, **({"title": title} if title else {}))


_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?\n)?\1[ \t]*(\n|\Z)", re.DOTALL)
_TITLE = re.compile(r"^title\s*[:=]\s*(.+?)\s*$", re.MULTILINE)


def _front_matter(text: str) -> tuple[str, str]:
    """The text without its YAML (``---``) or TOML (``+++``) front matter, which CommonMark
    would read as a rule and a heading, and the front matter's title. The block becomes blank
    lines, so line numbers stay; its values are only matched, never loaded as YAML."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return text, ""
    block = found.group(0)
    title = _TITLE.search(found.group(2) or "")
    name = title.group(1).strip("\"'") if title else ""
    return "\n" * block.count("\n") + text[found.end() :], name


def _block(token: Token, span: list[Token], lines: list[str]) -> TextSection | None:
    """One top-level Markdown block as a section (or None for rules and empty blocks)."""
    if token.type == "heading_open":
        return TextSection("", heading=span[1].content.strip(), level=int(token.tag[1]))
    if token.type == "table_open":
        return TextSection(markdown_table(_table_rows(span)), kind="table")
    if token.type == "paragraph_open":
        return TextSection(span[1].content.strip())
    if token.type in ("fence", "code_block"):
        return TextSection(token.content.rstrip("\n"), kind="code")
    if token.type == "hr" or token.map is None:
        return None
    body = "\n".join(lines[token.map[0] : token.map[1]]).strip()
    if not body:
        return None
    if token.type in ("bullet_list_open", "ordered_list_open"):
        return TextSection(body, kind="list")
    return TextSection(body)


def _close(tokens: list[Token], start: int) -> int:
    """Index of the token that closes the block opened at ``start``."""
    depth = 0
    for j in range(start, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _table_rows(tokens: list[Token]) -> list[list[str]]:
    rows: list[list[str]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(token.content)
    return rows


class JsonParser:
    """Top-level keys become sections; arrays of flat objects become tables."""

    name = "json"
    supported_mime_types: tuple[str, ...] = (JSON,)

    def parse(self, context: ParseContext) -> ParseResult:
        try:
            value = json.loads(_text(context))
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"the JSON file is malformed: {exc.msg} at line {exc.lineno}",
                filename=context.filename,
            ) from exc
        except RecursionError:
            raise InvalidInputError(
                "the JSON file is nested too deeply to read", filename=context.filename
            ) from None
        if isinstance(value, dict):
            sections: list[TextSection] = []
            for key, item in value.items():
                sections.append(TextSection("", heading=str(key), level=1))
                sections.append(_json_block(item))
            return result(sections)
        if value is None or value == [] or value == "":  # nothing to index, as `{}` has
            return result([])
        return result([_json_block(value)])


def _json_block(value: Any) -> TextSection:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        keys = list(dict.fromkeys(k for row in value for k in row))
        flat = all(not isinstance(row.get(k), dict | list) for row in value for k in keys)
        if flat:
            rows = [keys] + [[_scalar(row[k]) if k in row else "" for k in keys] for row in value]
            return TextSection(markdown_table(rows), kind="table")
    if isinstance(value, str | int | float | bool) or value is None:
        return TextSection(_scalar(value))
    return TextSection(json.dumps(value, ensure_ascii=False, indent=2), kind="code")


def _scalar(value: Any) -> str:
    """A value as the file wrote it: ``null``, ``true``, ``false`` (not Python's None, True,
    False); a string without its quotes."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
