"""dbt docs blocks (``{% docs name %} ... {% enddocs %}`` in Markdown files)."""

from __future__ import annotations

import re

from plugins.lakehouse_bi.model import DOC, FileCatalog, SemanticObject

# The block syntax is fixed by dbt (a name, then the body up to enddocs); Jinja2 has no such
# tag, so its parser cannot read it.
_BLOCK = re.compile(
    r"\{%-?\s*docs\s+([A-Za-z_][A-Za-z0-9_]*)\s*-?%\}(.*?)\{%-?\s*enddocs\s*-?%\}", re.S
)


def has_docs_blocks(text: str) -> bool:
    return _BLOCK.search(text) is not None


def read_docs(text: str) -> FileCatalog:
    objects = [
        SemanticObject(
            DOC, m.group(1), ("docs", m.group(1)), "dbt", description=" ".join(m.group(2).split())
        )
        for m in _BLOCK.finditer(text)
    ]
    return FileCatalog("dbt_docs", tuple(objects))
