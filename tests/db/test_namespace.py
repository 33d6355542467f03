from __future__ import annotations

import pytest

from eagle_rag.db.namespace import resolve_namespace
from eagle_rag.errors import NamespaceError
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
