"""The plugin manifest: a view collection must be one the plugin declares, of a named base."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from eagle_rag.plugins.contract import PluginManifest, milvus_database_for, namespace_problem


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


def test_the_reserved_namespace_is_refused_in_a_manifest() -> None:
    # "default" is Core's Milvus database: a plugin there would read and delete Core's chunks.
    with pytest.raises(ValidationError, match="reserved"):
        PluginManifest(namespace="default", version="1.0.0")


_VALID_NAMESPACES = st.from_regex(r"\A[a-z][a-z0-9-]{0,39}\Z").filter(
    lambda name: namespace_problem(name) is None
)


@given(_VALID_NAMESPACES, _VALID_NAMESPACES)
def test_two_valid_namespaces_never_share_a_milvus_database(first: str, second: str) -> None:
    if first != second:
        assert milvus_database_for(first) != milvus_database_for(second)


@pytest.mark.parametrize("name", ["default", "a_b", "Legal", "1legal", ""])
def test_names_that_would_collide_are_not_namespaces(name: str) -> None:
    # "default" is Core's database, "a_b" is "a-b"'s: neither may name a namespace.
    assert namespace_problem(name) is not None
