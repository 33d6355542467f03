"""An interrupted copy resumes: the next run copies exactly what the first did not."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from eagle_rag.bootstrap import bootstrap
from eagle_rag.db.repositories import DocumentRepository, KnowledgeBaseRepository
from eagle_rag.errors import ConflictError, InvalidInputError
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.migration.copier import copy_namespace
from eagle_rag.migration.stores import open_stores
from eagle_rag.settings import Settings, load_settings

pytestmark = pytest.mark.slow


class InterruptedCopyError(Exception):
    """Stands for a crash or Ctrl-C in the middle of a copy."""


def _settings(data_dir: Path, namespace: str = "core") -> Settings:
    return load_settings(
        {"EAGLE_DATA_DIR": str(data_dir), "EAGLE_ENCODER_MODE": "deterministic"},
        overrides={"plugins": {"default_namespace": namespace}},
    )


def _fill(data_dir: Path) -> None:
    async def run() -> None:
        app = await bootstrap(_settings(data_dir))
        try:
            app.repositories.knowledge_bases.create("kb")
            for number in range(6):
                text = f"# Part {number}\n\nSection {number} of the manual.\n".encode()
                app.ingest.submit_file(
                    kb_name="kb", filename=f"p{number}.md", stream=io.BytesIO(text)
                )
            assert isinstance(app.queue, InProcessQueue)
            await app.queue.join()
            await app.flush_vectors()
        finally:
            await app.stop()

    asyncio.run(run())


def test_a_copy_interrupted_after_the_metadata_resumes_with_the_rest(tmp_path: Path) -> None:
    _fill(tmp_path / "source")

    def crash_at_vectors(stage: str, item: str, done: int, total: int) -> None:
        if stage == "vectors":
            raise InterruptedCopyError

    with (
        open_stores(_settings(tmp_path / "source"), create=False) as source,
        open_stores(_settings(tmp_path / "target"), create=True) as target,
    ):
        with pytest.raises(InterruptedCopyError):
            copy_namespace(source, target, progress=crash_at_vectors)
        resumed = copy_namespace(source, target)
        again = copy_namespace(source, target)
    assert resumed.verified, resumed.to_dict()
    assert resumed.copied["documents"] == 0  # the first run had written them
    assert resumed.copied["vectors:eagle_text"] >= 6
    assert resumed.copied["objects"] == 6
    assert again.total_copied == 0 and again.verified


def test_source_and_target_of_different_namespaces_are_refused(tmp_path: Path) -> None:
    with (
        open_stores(_settings(tmp_path / "a"), create=False) as source,
        open_stores(_settings(tmp_path / "b", "biomed"), create=True) as target,
        pytest.raises(InvalidInputError, match="same namespace"),
    ):
        copy_namespace(source, target)


def test_a_knowledge_base_the_target_has_under_the_same_name_is_refused_first(
    tmp_path: Path,
) -> None:
    """Another KB of the same name: its documents joined the target's, and a raw
    IntegrityError ended the run after they were written."""
    _fill(tmp_path / "source")
    with (
        open_stores(_settings(tmp_path / "source"), create=False) as source,
        open_stores(_settings(tmp_path / "target"), create=True) as target,
    ):
        KnowledgeBaseRepository(target.database, "core").create("kb")  # another "kb"
        with pytest.raises(ConflictError, match="other knowledge bases of these names: kb"):
            copy_namespace(source, target)
        assert DocumentRepository(target.database, "core").count() == 0  # nothing written


def test_a_source_that_is_the_target_is_refused(tmp_path: Path) -> None:
    """What EAGLE_DATABASE_URL and MILVUS_URI set for both sides did: nothing but objects
    moved, and they landed without rows."""
    settings = _settings(tmp_path / "same")
    with (
        open_stores(settings, create=True) as source,
        open_stores(settings, create=False) as target,
        pytest.raises(InvalidInputError, match="same database and Milvus"),
    ):
        copy_namespace(source, target)


def test_a_target_holding_other_data_of_the_namespace_verifies(tmp_path: Path) -> None:
    """Verification compared counts, so a target with a KB of its own always said "NO"."""
    _fill(tmp_path / "source")
    with (
        open_stores(_settings(tmp_path / "source"), create=False) as source,
        open_stores(_settings(tmp_path / "target"), create=True) as target,
    ):
        KnowledgeBaseRepository(target.database, "core").create("theirs")
        report = copy_namespace(source, target)
    assert report.verified, report.to_dict()
    checks = {c.item: (c.source, c.target) for c in report.checks}
    assert checks["knowledge_bases"] == (1, 1) and checks["objects"] == (6, 6)
