"""Both ends of a migration: the metadata database, the namespace's Milvus Database and the
object store of one namespace, opened from settings with schema and collections in place."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from eagle_rag.db.database import Database
from eagle_rag.errors import SettingsError
from eagle_rag.index.factory import build_pool, build_vector_store
from eagle_rag.migration.vectors import VectorSide
from eagle_rag.settings import PROFILE_VARIABLE, Settings, interpolate, load_settings
from eagle_rag.storage.base import ObjectStore
from eagle_rag.storage.factory import build_object_store


@dataclass(frozen=True, slots=True)
class Stores:
    """The three stores of one namespace."""

    namespace: str
    database: Database
    vectors: VectorSide
    objects: ObjectStore
    description: str


def resolve_settings(
    spec: str | None, env: Mapping[str, str], *, namespace: str | None = None
) -> Settings:
    """Settings named by ``spec``: empty (the current ones), a profile name, or a YAML file.

    A YAML file is either a whole settings file (it has ``profiles``) or an overlay deep-merged
    over the current settings, e.g. just the ``database``, ``milvus`` and ``storage`` sections.
    """
    overrides: dict[str, Any] = {}
    if namespace:
        overrides["plugins"] = {"default_namespace": namespace}
    if not spec:
        return load_settings(env, overrides=overrides)
    path = Path(spec)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise SettingsError(f"settings file {spec!r} does not exist", path=spec)
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(raw, dict):
            raise SettingsError(f"settings file {spec!r} is not a mapping", path=spec)
        if "profiles" in raw:
            return load_settings(env, path=path, overrides=overrides)
        overlay = interpolate(raw, env)
        return load_settings(env, overrides=_merge(overlay, overrides))
    return load_settings({**env, PROFILE_VARIABLE: spec}, overrides=overrides)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    from eagle_rag.settings import deep_merge

    return deep_merge(base, extra)


@contextmanager
def open_stores(settings: Settings, *, create: bool) -> Iterator[Stores]:
    """Open (and with ``create``, prepare: schema, collections, bucket) a namespace's stores."""
    namespace = settings.plugins.default_namespace
    database = Database(settings.database.url, echo=settings.database.echo)
    pool = build_pool(settings.milvus)
    store = build_vector_store(settings.milvus, pool, namespace)
    objects = build_object_store(settings)
    try:
        database.migrate()  # the same head revision on both sides: rows fit both schemas
        if create:
            store.ensure_collections()
            ensure_bucket = getattr(objects, "ensure_bucket", None)
            if ensure_bucket is not None:
                ensure_bucket()
        yield Stores(
            namespace=namespace,
            database=database,
            vectors=VectorSide(pool, store),
            objects=objects,
            description=describe(settings),
        )
    finally:
        database.dispose()
        pool.close()


def describe(settings: Settings) -> str:
    from eagle_rag.settings import mask_url_password

    return (
        f"{mask_url_password(settings.database.url)} · milvus {settings.milvus.uri} · "
        f"objects {settings.storage.backend}"
    )
