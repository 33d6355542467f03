"""Resolve a request's namespace against the instance's (ADR-002).

An instance serves exactly one namespace. A request that names another gets NamespaceError (403 at
the edge) unless ``plugins.allow_namespace_override`` is on, which exists for tests only.
"""

from __future__ import annotations

from eagle_rag.errors import InvalidInputError, NamespaceError
from eagle_rag.plugins.contract import namespace_problem
from eagle_rag.settings import PluginSettings


def resolve_namespace(requested: str | None, plugins: PluginSettings) -> str:
    """The namespace a request acts in: the instance default unless an override is allowed."""
    default = plugins.default_namespace
    if requested is None or requested == "" or requested == default:
        return default
    if plugins.allow_namespace_override:
        problem = namespace_problem(requested)
        if problem:
            # A reserved name would act in Core's Milvus database: refused even here.
            raise InvalidInputError(problem, namespace=requested)
        return requested
    raise NamespaceError(
        f"this instance serves namespace {default!r}; requests for {requested!r} are refused",
        namespace=requested,
        expected=default,
    )
