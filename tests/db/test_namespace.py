from __future__ import annotations

import pytest

from eagle_rag.db.namespace import resolve_namespace
from eagle_rag.errors import InvalidInputError, NamespaceError
from eagle_rag.settings import PluginSettings


def test_no_namespace_or_the_default_resolves_to_the_default() -> None:
    plugins = PluginSettings(default_namespace="biomed")
    assert resolve_namespace(None, plugins) == "biomed"
    assert resolve_namespace("", plugins) == "biomed"
    assert resolve_namespace("biomed", plugins) == "biomed"


@pytest.mark.parametrize("requested", ["core", "lakehouse-bi", "biomed ", "../biomed", "BIOMED"])
def test_another_namespace_is_forbidden(requested: str) -> None:
    with pytest.raises(NamespaceError) as info:
        resolve_namespace(requested, PluginSettings(default_namespace="biomed"))
    assert info.value.fields == {"namespace": requested, "expected": "biomed"}


def test_override_is_allowed_only_when_configured() -> None:
    plugins = PluginSettings(default_namespace="core", allow_namespace_override=True)
    assert resolve_namespace("biomed", plugins) == "biomed"


@pytest.mark.parametrize("requested", ["default", "a_b"])
def test_an_override_to_a_reserved_or_misshapen_namespace_is_refused(requested: str) -> None:
    # Overrides are for tests, yet "default" would still act in Core's Milvus database.
    plugins = PluginSettings(default_namespace="core", allow_namespace_override=True)
    with pytest.raises(InvalidInputError, match=requested):
        resolve_namespace(requested, plugins)
