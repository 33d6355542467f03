"""A plugin parses a file with another plugin's Parser through its PluginContext."""

from __future__ import annotations

import pytest

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.parsers.registry import builtin_parsers
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import ComponentRegistries, PluginContext
from eagle_rag.plugins.payloads import ParseResult, TextSection
from eagle_rag.settings import Settings
from tests.ingest import documents as docs


class ShoutParser:
    """A domain plugin's parser for a type the built-ins do not claim first."""

    name = "shout"
    supported_mime_types = ("text/csv",)

    def parse(self, context: object) -> ParseResult:
        text = context.data.decode().upper()  # type: ignore[attr-defined]
        return ParseResult(text=text, sections=(TextSection(text),))


def contexts(settings: Settings) -> tuple[PluginContext, PluginContext]:
    registries = ComponentRegistries()
    audit = PluginAudit(ring_cap=10)
    core = PluginContext(namespace="core", settings=settings, audit=audit, registries=registries)
    domain = PluginContext(
        namespace="biomed", settings=settings, audit=audit, registries=registries
    )
    for parser in builtin_parsers():
        core.register_parser(parser.name, parser)
    domain.register_parser("shout", ShoutParser())  # loaded after Core: it wins for CSV
    return core, domain


def test_a_plugin_uses_parsers_it_does_not_own(settings: Settings) -> None:
    core, domain = contexts(settings)
    parsed = domain.parse(docs.pdf_bytes(), "report.pdf")
    assert parsed.metadata["pages"] == 3 and "scope of the audit" in parsed.text
    shouted = core.parse(b"a,b\n1,2\n", "table.csv")
    assert shouted.text == "A,B\n1,2\n"


def test_parse_detects_the_type_and_refuses_what_nobody_parses(settings: Settings) -> None:
    core, _ = contexts(settings)
    with pytest.raises(InvalidInputError, match="claims to be application/pdf"):
        core.parse(b"plain text", "fake.pdf")
    with pytest.raises(InvalidInputError, match="unsupported file type"):
        core.parse(b"GIF89a\0\0\0\0", "image.gif")  # GIF: no parser
