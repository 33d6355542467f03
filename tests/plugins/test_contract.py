"""The plugin manifest: a view collection must be one the plugin declares, of a named base."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from eagle_rag.plugins.contract import PluginManifest


def test_a_declared_view_names_its_base() -> None:
    manifest = PluginManifest(
        namespace="dom",
        version="1.0.0",
        provides_specialized_collections=("dom_view",),
        collection_views={"dom_view": "eagle_text"},
    )
    assert manifest.collection_views == {"dom_view": "eagle_text"}


@pytest.mark.parametrize(
    ("views", "message"),
    [
        ({"undeclared": "eagle_text"}, "not one of provides_specialized_collections"),
        ({"dom_view": "dom_view"}, "invalid base collection"),
        ({"dom_view": "bad name"}, "invalid base collection"),
    ],
)
def test_a_view_of_an_undeclared_or_invalid_collection_is_refused(
    views: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        PluginManifest(
            namespace="dom",
            version="1.0.0",
            provides_specialized_collections=("dom_view",),
            collection_views=views,
        )
