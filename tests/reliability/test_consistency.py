"""``eagle-rag doctor --consistency [--repair]`` on a real embedded instance: each kind of damage
is found, repair removes orphans and re-ingests what lost its vectors, and a clean instance
exits 0."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.cli import app as cli
from eagle_rag.db.repositories.base import new_id
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.settings import load_settings
from eagle_rag.storage.keys import object_key

runner = CliRunner()


def _env(data: Path) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(data), "EAGLE_ENCODER_MODE": "deterministic"}


async def _with_app(data: Path, work: Any) -> Any:
    application = await bootstrap(load_settings(_env(data)))
    try:
        return await work(application)
    finally:
        await application.stop()


async def _settle(app: EagleApp) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        counts = app.repositories.tasks.count_by_status()
        if not counts.get("queued") and not counts.get("processing"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"tasks did not settle: {app.repositories.tasks.count_by_status()}")


BY_HAND = "{ns}/docs/stray-by-hand.txt"


async def _damage(app: EagleApp) -> dict[str, str]:
    app.repositories.knowledge_bases.create("docs")
    ids = {}
    for name in ("orphaned", "unvectored", "failed", "unstored", "healthy"):
        text = f"# {name}\n\nThe {name} document talks about wombats and {name}.\n"
        submission = app.ingest.submit_file(
            kb_name="docs", filename=f"{name}.md", stream=io.BytesIO(text.encode())
        )
        ids[name] = submission.document_id
    await app.queue.join()  # type: ignore[attr-defined]
    await app.flush_vectors()
    repos = app.repositories
    repos.documents.delete(ids["orphaned"])  # catalog row gone: vectors and object orphaned
    app.vectors.delete_documents([ids["unvectored"]])
    repos.documents.set_fields(ids["failed"], status="failed", error="boom")
    key = repos.documents.get(ids["unstored"]).object_key
    assert key is not None
    app.objects.delete(key)
    stray = object_key(app.namespace, "docs", new_id(), "stray.txt")
    app.objects.put(stray, io.BytesIO(b"nobody's"), content_type="text/plain")
    # Under no document id (put there by hand): it was counted, never reported, and exported.
    app.objects.put(BY_HAND.format(ns=app.namespace), io.BytesIO(b"x"), content_type="text/plain")
    await app.flush_vectors()
    return ids


def _doctor(data: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(cli, ["doctor", "--consistency", "--json", *extra], env=_env(data))
    return result.exit_code, json.loads(result.stdout)


def test_consistency_finds_repairs_and_then_passes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = asyncio.run(_with_app(data, _damage))

    code, report = _doctor(data)
    assert code == 1 and not report["clean"]
    found = {(f["kind"], f["document_id"]) for f in report["findings"]}
    assert ("orphan_vectors", ids["orphaned"]) in found
    assert ("orphan_object", ids["orphaned"]) in found
    assert ("missing_vectors", ids["unvectored"]) in found
    assert ("failed_with_vectors", ids["failed"]) in found
    assert ("missing_object", ids["unstored"]) in found
    assert {f["kind"] for f in report["findings"]} == {
        "orphan_vectors",
        "orphan_object",
        "missing_vectors",
        "failed_with_vectors",
        "missing_object",
        "stray_object",
    }
    assert sum(1 for f in report["findings"] if f["kind"] == "orphan_object") == 2
    [stray] = [f for f in report["findings"] if f["kind"] == "stray_object"]
    assert stray["key"].endswith("/docs/stray-by-hand.txt") and stray["document_id"] is None
    assert all(f["document_id"] != ids["healthy"] for f in report["findings"])
    assert _doctor(data)[1] == report  # checking alone changes nothing

    code, repaired = _doctor(data, "--repair")
    assert code == 1  # it found damage; what it could repair, it did
    actions = {f["kind"]: f["repaired"] for f in repaired["findings"]}
    assert actions["orphan_vectors"] == "vectors deleted"
    assert actions["orphan_object"] == "object deleted"
    assert actions["failed_with_vectors"] == "vectors deleted"
    assert actions["missing_vectors"].startswith("re-ingest queued")
    assert actions["missing_object"] == ""  # nothing can bring an original back
    assert actions["stray_object"] == ""  # not Eagle-RAG's to delete

    async def rebuild_and_drop_the_unrecoverable(app: EagleApp) -> None:
        await _settle(app)  # the queue took the re-ingest over at start
        await app.flush_vectors()
        assert app.repositories.documents.get(ids["unvectored"]).status == "completed"
        remove_document(app, ids["unstored"])
        app.objects.delete(BY_HAND.format(ns=app.namespace))  # what the operator does by hand

    asyncio.run(_with_app(data, rebuild_and_drop_the_unrecoverable))
    code, final = _doctor(data)
    assert (code, final["clean"], final["findings"]) == (0, True, [])
    assert final["documents"] == 3


def test_repair_needs_consistency(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["doctor", "--repair"], env=_env(tmp_path / "data"))
    assert result.exit_code == 2 and "--repair needs --consistency" in result.output
