"""``eagle-rag export`` / ``import``: a namespace to one file and back, on the embedded stores."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eagle_rag.bootstrap import bootstrap
from eagle_rag.cli import app as cli
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest.queue import InProcessQueue
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.plugins.payloads import QueryRequest
from eagle_rag.settings import load_settings

pytestmark = pytest.mark.slow

DOCS = {
    "a.md": "# Alpha\n\nThe alpha turbine spins at nine hundred rpm.\n",
    "b.md": "# Beta\n\nThe beta gearbox needs synthetic oil every year.\n",
    "c.md": "# Gamma\n\n伽马变压器每年检修一次。\n",
}


def _env(data_dir: Path) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(data_dir), "EAGLE_ENCODER_MODE": "deterministic"}


async def _search(data_dir: Path, fill: bool) -> list[list[str]]:
    app = await bootstrap(load_settings(_env(data_dir)))
    try:
        if fill:
            app.repositories.knowledge_bases.create("wiki")
            for name, text in DOCS.items():
                app.ingest.submit_file(
                    kb_name="wiki", filename=name, stream=io.BytesIO(text.encode())
                )
            assert isinstance(app.queue, InProcessQueue)
            await app.queue.join()
            await app.flush_vectors()
        found = []
        for query in ("turbine rpm", "gearbox oil", "变压器检修"):
            pack = await app.retrieval.search(QueryRequest(query, kb_names=("wiki",), top_k=1))
            found.append([p.chunk_id for p in pack.passages])
        return found
    finally:
        await app.stop()


def _run(args: list[str], env: dict[str, str]) -> Any:
    return CliRunner().invoke(cli, args, env=env)


def test_export_then_import_restores_the_namespace_and_a_second_import_writes_nothing(
    tmp_path: Path,
) -> None:
    before = asyncio.run(_search(tmp_path / "source", fill=True))
    archive = tmp_path / "core.tar.gz"
    exported = _run(["export", "core", str(archive), "--json"], _env(tmp_path / "source"))
    assert exported.exit_code == 0, exported.output
    counts = json.loads(exported.stdout)["copied"]
    assert counts["documents"] == 3 and counts["objects"] == 3
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert names[0] == "manifest.json" and names[-1] == "summary.json"
    specs = {spec["name"]: spec for spec in manifest["collections"]}
    assert specs[TEXT_COLLECTION]["encoder"] == "hashing-384"  # whose vectors these are

    restored_env = _env(tmp_path / "restored")
    first = _run(["import", str(archive), "--json"], restored_env)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["copied"]["documents"] == 3
    assert report["copied"]["objects"] == 3
    second = _run(["import", str(archive), "--json"], restored_env)
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["total_copied"] == 0

    after = asyncio.run(_search(tmp_path / "restored", fill=False))
    assert after == before and all(after)

    # A store whose eagle_text holds another 384-d encoder's vectors: refused, nothing written.
    other = tmp_path / "other"
    asyncio.run(_fill_with_minilm(other))
    refused = _run(["import", str(archive), "--json"], _env(other))
    assert refused.exit_code != 0
    said = " ".join(refused.output.split())  # the console wraps long lines
    assert f"holds vectors of the encoder {MiniLMEncoder.name!r}" in said
    assert "configured with 'hashing-384'" in said
    assert asyncio.run(_kb_names(other)) == ["notes"]


MINILM = {"models": {"embedding": {"provider": "minilm", "encoder_mode": "require_native"}}}


async def _fill_with_minilm(data_dir: Path) -> None:
    app = await bootstrap(load_settings({"EAGLE_DATA_DIR": str(data_dir)}, overrides=MINILM))
    try:
        app.repositories.knowledge_bases.create("notes")
        body = io.BytesIO(b"# Delta\n\nThe delta pump is serviced in spring.\n")
        app.ingest.submit_file(kb_name="notes", filename="d.md", stream=body)
        await app.queue.join()  # type: ignore[attr-defined]
    finally:
        await app.stop()


async def _kb_names(data_dir: Path) -> list[str]:
    app = await bootstrap(load_settings({"EAGLE_DATA_DIR": str(data_dir)}, overrides=MINILM))
    try:
        return sorted(k.name for k in app.repositories.knowledge_bases.list())
    finally:
        await app.stop()


def test_export_from_a_fresh_process_loads_the_released_collections(tmp_path: Path) -> None:
    """A Milvus Lite file opened by a new process has its collections released: the copy's
    query failed ("call load() before search/get/query"), so did migrate-store's."""
    files = tmp_path / "files"
    files.mkdir()
    for name, text in DOCS.items():
        (files / name).write_text(text, encoding="utf-8")
    env = {**os.environ, **_env(tmp_path / "source")}  # each command a process of its own
    archive = tmp_path / "core.tar.gz"
    for args in (
        ["ingest", str(files), "--kb", "wiki", "--create"],
        ["export", "core", str(archive), "--json"],
    ):
        command = [sys.executable, "-m", "eagle_rag", *args]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (args[0], done.stderr[-2000:])
    assert json.loads(done.stdout)["copied"]["documents"] == 3


def test_import_refuses_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.tar.gz"
    bogus.write_bytes(b"plain text, not an archive")
    result = _run(["import", str(bogus)], _env(tmp_path / "data"))
    assert result.exit_code == 2
    assert "not a readable Eagle-RAG export" in _one_line(result.output)
    assert not (tmp_path / "data" / "eagle.db").exists()  # nothing was opened or written


def test_import_refuses_an_archive_of_another_format(tmp_path: Path) -> None:
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        data = json.dumps({"format": "something-else", "version": 1}).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    result = _run(["import", str(other)], _env(tmp_path / "data"))
    assert result.exit_code == 2
    assert "not a version-1 Eagle-RAG export" in _one_line(result.output)


def test_import_refuses_a_missing_file(tmp_path: Path) -> None:
    result = _run(["import", str(tmp_path / "absent.tar.gz")], _env(tmp_path / "data"))
    assert result.exit_code == 2
    assert "does not exist" in _one_line(result.output)


def _one_line(output: str) -> str:
    """The CLI wraps errors at the terminal's width, which a long temp path moves."""
    return " ".join(output.split())


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of a filled embedded store."""
    root = tmp_path_factory.mktemp("exported")
    asyncio.run(_search(root / "source", fill=True))
    archive = root / "core.tar.gz"
    result = _run(["export", "core", str(archive)], _env(root / "source"))
    assert result.exit_code == 0, result.output
    return archive


def test_export_of_a_namespace_that_holds_nothing_is_refused(exported: Path) -> None:
    """A misspelt namespace made an archive of zeros and exited 0: a backup of nothing."""
    source = exported.parent / "source"
    archive = exported.parent / "coer.tar.gz"
    result = _run(["export", "coer", str(archive)], _env(source))
    assert result.exit_code == 2, result.output
    assert "holds nothing to export" in result.output
    assert not archive.exists()


def test_import_refuses_a_truncated_export_and_writes_nothing(
    exported: Path, tmp_path: Path
) -> None:
    """A killed export, a full disk or a partial copy: the metadata at the archive's start was
    imported before the break, leaving documents without vectors or originals."""
    data = exported.read_bytes()
    for cut in (len(data) // 3, 2 * len(data) // 3):
        truncated = tmp_path / f"cut-{cut}.tar.gz"
        truncated.write_bytes(data[:cut])
        result = _run(["import", str(truncated)], _env(tmp_path / "data"))
        assert result.exit_code == 2, result.output
        said = _one_line(result.output)
        assert "nothing was written" in said, said
        assert not (tmp_path / "data" / "eagle.db").exists()


def test_import_refuses_an_export_missing_what_its_summary_counts(
    exported: Path, tmp_path: Path
) -> None:
    pruned = tmp_path / "pruned.tar.gz"
    with tarfile.open(exported) as source, tarfile.open(pruned, "w:gz") as target:
        for member in source.getmembers():
            if not member.name.startswith("vectors/"):
                target.addfile(member, source.extractfile(member))
    result = _run(["import", str(pruned)], _env(tmp_path / "data"))
    assert result.exit_code == 2, result.output
    said = _one_line(result.output)
    assert "does not hold what its summary.json counts" in said
    assert "vectors:eagle_text" in said
    assert not (tmp_path / "data" / "eagle.db").exists()


def test_import_refuses_rows_of_another_namespace(exported: Path, tmp_path: Path) -> None:
    """The manifest says core; a KB row edited to say otherwise must not land in that
    namespace (the archive is otherwise complete, so only the namespace check can refuse it)."""
    edited = tmp_path / "edited.tar.gz"
    with tarfile.open(exported) as source, tarfile.open(edited, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member)
            body = data.read() if data is not None else b""
            if member.name.startswith("metadata/knowledge_bases/"):
                rows = [json.loads(line) for line in body.decode().splitlines() if line]
                body = "".join(
                    json.dumps({**row, "plugin_namespace": "tenant2"}) + "\n" for row in rows
                ).encode()
                member.size = len(body)
            target.addfile(member, io.BytesIO(body))
    result = _run(["import", str(edited)], _env(tmp_path / "data"))
    assert result.exit_code == 2, result.output
    assert "rows of another namespace" in _one_line(result.output)
    tenant = load_settings({**_env(tmp_path / "data"), "PLUGIN_NAMESPACE": "tenant2"})
    app = asyncio.run(bootstrap(tenant))
    try:
        assert app.repositories.knowledge_bases.list() == []
    finally:
        asyncio.run(app.stop())


def test_import_refuses_a_kb_of_the_same_name_made_since_and_writes_nothing(
    exported: Path, tmp_path: Path
) -> None:
    """The target had deleted the exported "wiki" and made a new one: the import wrote what
    came before the KB rows, then died on the unique name with a raw IntegrityError, exit 1."""
    env = _env(tmp_path / "data")

    async def make_another_wiki() -> None:
        app = await bootstrap(load_settings(env))
        try:
            app.repositories.knowledge_bases.create("wiki")
        finally:
            await app.stop()

    asyncio.run(make_another_wiki())
    result = _run(["import", str(exported)], env)
    assert result.exit_code == 2, result.output
    said = _one_line(result.output)
    assert "already has other knowledge bases of these names: wiki" in said, said
    assert "IntegrityError" not in said

    async def documents() -> int:
        app = await bootstrap(load_settings(env))
        try:
            return app.repositories.documents.count(kb_name="wiki")
        finally:
            await app.stop()

    assert asyncio.run(documents()) == 0


@pytest.mark.parametrize("key", ["core/../tenant2/x.pdf", "tenant2/x.pdf", "core//x.pdf"])
def test_an_object_key_out_of_the_namespace_is_refused_before_anything_is_written(
    exported: Path, tmp_path: Path, key: str
) -> None:
    """It was refused only when its turn came: the metadata, vectors and first objects were
    already written, and the message did not say so."""
    edited = tmp_path / "edited.tar.gz"
    with tarfile.open(exported) as source, tarfile.open(edited, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member)
            if member.name.startswith("objects/") and data is not None:
                member.name = f"objects/{key}"
            target.addfile(member, data)
    result = _run(["import", str(edited)], _env(tmp_path / "data"))
    assert result.exit_code == 2, result.output
    said = _one_line(result.output)
    assert "an object of another namespace in the export; nothing was written" in said
    assert not (tmp_path / "data" / "eagle.db").exists()


def test_an_export_that_fails_keeps_the_earlier_backup(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive was written in place: a failed (or killed) export left a truncated file
    under the backup's name, replacing last night's good one."""
    from eagle_rag.migration import archive as archive_module

    backup = tmp_path / "backup.tar.gz"
    backup.write_bytes(exported.read_bytes())

    def full_disk(*_: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(archive_module.objects, "reader", full_disk)
    source = exported.parent / "source"
    result = _run(["export", "core", str(backup)], _env(source))
    assert result.exit_code == 2, result.output
    assert "No space left on device" in _one_line(result.output)
    assert backup.read_bytes() == exported.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.tar.gz"]  # no partial file


def test_an_import_is_verified_on_the_target(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "on target" column repeated the archive's own summary: an import whose vectors
    never arrived still read "ok" everywhere and exited 0."""
    from eagle_rag.migration import vectors as vector_module

    monkeypatch.setattr(vector_module.VectorSide, "write_missing", lambda self, collection, rows: 0)
    result = _run(["import", str(exported), "--json"], _env(tmp_path / "data"))
    assert result.exit_code == 1, result.output
    checks = {c["item"]: c for c in json.loads(result.stdout)["checks"]}
    text = checks["vectors:eagle_text"]
    assert (text["target"], text["ok"]) == (0, False) and text["source"] > 0
    assert checks["documents"] == {"item": "documents", "source": 3, "target": 3, "ok": True}
    assert checks["objects"]["ok"]
