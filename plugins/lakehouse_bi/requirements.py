"""The extra packages the plugin needs, checked once at import with a message that says how to
install them (``pip install 'eagle-rag[lakehouse-bi]'``) instead of a bare ImportError."""

from __future__ import annotations

import importlib.util

# module name -> the package that provides it
REQUIRED = {
    "sqlglot": "sqlglot",
    "lkml": "lkml",
    "jinja2": "Jinja2",
    "yaml": "PyYAML",
    "tree_sitter": "tree-sitter",
    "tree_sitter_javascript": "tree-sitter-javascript",
}


def missing() -> list[str]:
    return [
        package for module, package in REQUIRED.items() if importlib.util.find_spec(module) is None
    ]


def check() -> None:
    absent = missing()
    if absent:
        raise ImportError(
            f"the lakehouse-bi plugin needs {', '.join(absent)}: "
            "pip install 'eagle-rag[lakehouse-bi]'"
        )
