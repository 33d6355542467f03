"""The lakehouse Parser component: claims semantic-layer files by name and content, reads them
into typed objects and hands Knowhere one section per object.

Claims (asked only for text files, see ``eagle_rag.ingest.parsers.registry.parser_for``):

- ``.yml`` / ``.yaml`` whose top-level keys are dbt's (``models:``, ``sources:``,
  ``semantic_models:``, ``metrics:``, ``exposures:``...), Cube's (``cubes:``) or a
  ``dbt_project.yml``;
- ``.sql`` (a dbt model, or DDL; not a file of dbt macros only);
- ``.lkml``;
- ``.js`` that calls Cube's ``cube()`` / ``view()`` (a Cube JavaScript model);
- ``.json`` that is a dbt manifest (``metadata.dbt_schema_version``);
- ``.md`` with dbt ``{% docs %}`` blocks.

Anything else stays with Core's parsers. A claimed file that cannot be read raises
InvalidInputError with the reason (line and column for YAML), which fails that document alone.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from eagle_rag.errors import InvalidInputError
from eagle_rag.ingest.detect import decode_text
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.plugins.payloads import ParseResult
from plugins.lakehouse_bi.model import FileCatalog, SemanticObject, as_list, clean
from plugins.lakehouse_bi.parsers.common import load_yaml
from plugins.lakehouse_bi.parsers.cube import is_cube_yaml, read_cube_yaml
from plugins.lakehouse_bi.parsers.cube_js import is_cube_js, read_cube_js
from plugins.lakehouse_bi.parsers.dbt_yaml import DBT_KEYS, is_dbt_yaml, read_dbt_yaml
from plugins.lakehouse_bi.parsers.docs import has_docs_blocks, read_docs
from plugins.lakehouse_bi.parsers.lookml import read_lookml
from plugins.lakehouse_bi.parsers.manifest import is_manifest, read_manifest
from plugins.lakehouse_bi.parsers.sql import is_macro_file, read_sql
from plugins.lakehouse_bi.render import to_parse_result

YAML_SUFFIXES = (".yml", ".yaml")
_TOP_KEYS = DBT_KEYS | {"cubes", "views", "config-version"}
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:", re.M)
SNIFF_BYTES = 64 * 1024
PROJECT = "project"


class LakehouseParser:
    """dbt, MetricFlow, LookML, Cube (YAML, JS) and SQL DDL files → one typed section each."""

    name = "lakehouse-bi"
    # Nothing by MIME alone: these files are all text/plain; ``claims`` picks them.
    supported_mime_types: tuple[str, ...] = ()

    def claims(self, filename: str, data: bytes) -> bool:
        suffix = PurePosixPath(filename.lower()).suffix
        if suffix == ".sql":  # a dbt macro file stays Core text: it defines no model
            return not is_macro_file(decode_text(data) or "")
        if suffix == ".lkml":
            return True
        head = data[:SNIFF_BYTES].decode("utf-8", errors="ignore")
        if suffix in YAML_SUFFIXES:
            return bool(_TOP_KEYS & set(_TOP_KEY.findall(head)))
        if suffix == ".json":
            return "dbt_schema_version" in head
        if suffix == ".js":
            return is_cube_js(head)
        if suffix in (".md", ".markdown"):
            return has_docs_blocks(decode_text(data) or "")
        return False

    def parse(self, context: ParseContext) -> ParseResult:
        text = decode_text(context.data)
        if text is None or not text.strip():
            raise InvalidInputError("the file has no text", filename=context.filename)
        catalog = read_file(text, context.filename)
        if not catalog.objects:
            raise InvalidInputError(
                "the file defines no model, column, metric or other semantic-layer object",
                filename=context.filename,
            )
        return to_parse_result(catalog, filename=context.filename)


def read_file(text: str, filename: str) -> FileCatalog:
    """The typed objects of one file, chosen by its suffix and content."""
    suffix = PurePosixPath(filename.lower()).suffix
    if suffix == ".sql":
        return read_sql(text, filename)
    if suffix == ".lkml":
        return read_lookml(text, filename)
    if suffix == ".js":
        return read_cube_js(text, filename)
    if suffix in (".md", ".markdown"):
        return read_docs(text)
    if suffix == ".json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"the manifest is malformed JSON: {exc.msg} at line {exc.lineno}",
                filename=filename,
            ) from exc
        if not is_manifest(value):
            raise InvalidInputError("the JSON file is not a dbt manifest", filename=filename)
        return read_manifest(value)
    value = load_yaml(text, filename)
    if is_cube_yaml(value):
        return read_cube_yaml(value)
    if isinstance(value, dict) and ("config-version" in value or "profile" in value):
        return _dbt_project(value)
    if is_dbt_yaml(value):
        return read_dbt_yaml(value)
    raise InvalidInputError(
        "the YAML file is neither a dbt, MetricFlow nor Cube file", filename=filename
    )


def _dbt_project(value: dict[str, object]) -> FileCatalog:
    name = clean(value.get("name")) or "dbt_project"
    details = tuple(
        (key, ", ".join(clean(v) for v in as_list(value.get(key))))
        for key in ("version", "profile", "model-paths", "require-dbt-version")
        if value.get(key)
    )
    obj = SemanticObject(
        PROJECT, name, ("dbt_project",), "dbt", description=f"dbt project {name}", details=details
    )
    return FileCatalog("dbt_project", (obj,), extra={"project_name": name})
