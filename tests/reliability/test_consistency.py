"""``eagle-rag doctor --consistency [--repair]`` on a real embedded instance: each kind of damage
is found, repair removes orphans and re-ingests what lost its vectors, and a clean instance
exits 0."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.cli import app as cli
from eagle_rag.consistency import check
from eagle_rag.db.repositories.base import new_id
from eagle_rag.db.tables import TaskRow
from eagle_rag.index.collections import TEXT_COLLECTION
from eagle_rag.ingest import pipeline as pipeline_module
from eagle_rag.ingest.cancel import CANCELLED, cancel_task
from eagle_rag.ingest.deletion import remove_document
from eagle_rag.ingest.leases import host_prefix
from eagle_rag.ingest.pipeline import PipelineResult
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


async def _replaced_but_left(app: EagleApp) -> tuple[str, str]:
    """Two versions of report.md, the process gone between the second one's completion and
    its removal of the first (a kill -9 there): both completed and searchable."""
    app.repositories.knowledge_bases.create("docs")
    ids = []
    for word in ("aardvarks", "pangolins"):
        text = f"# Report\n\nThis version of the report is about {word}.\n"
        submission = app.ingest.submit_file(
            kb_name="docs", filename="report.md", stream=io.BytesIO(text.encode())
        )
        await app.queue.join()  # type: ignore[attr-defined]
        ids.append(submission.document_id)
    await app.flush_vectors()
    statuses = {app.repositories.documents.get(i).status for i in ids}
    assert statuses == {"completed"}
    return ids[0], ids[1]


def _die_before_removing(monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(app: EagleApp, document_id: str) -> None:
        raise RuntimeError("the process died here")

    monkeypatch.setattr(pipeline_module, "remove_document", killed)


def _searchable(app: EagleApp, word: str) -> set[str]:
    [hits] = app.vectors.search_sparse(TEXT_COLLECTION, [word], top_k=10)
    return {h.fields["document_id"] for h in hits}


def test_a_replacement_a_crash_interrupted_is_found_and_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    _die_before_removing(monkeypatch)
    old, _new = asyncio.run(_with_app(data, _replaced_but_left))
    monkeypatch.undo()

    code, report = _doctor(data)
    assert code == 1
    assert [(f["kind"], f["document_id"]) for f in report["findings"]] == [
        ("replaced_version", old)
    ]
    code, repaired = _doctor(data, "--repair")
    assert repaired["findings"][0]["repaired"].startswith("document removed")
    code, final = _doctor(data)
    assert (code, final["findings"], final["documents"]) == (0, [], 1)


def test_a_replaced_version_stays_while_its_newer_one_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newer version's vectors were lost too: repair sent it through the pipeline again
    and then removed the older one, the only searchable version, from findings read before."""
    _die_before_removing(monkeypatch)

    async def crashed_then_repaired(app: EagleApp) -> None:
        old, new = await _replaced_but_left(app)
        monkeypatch.undo()
        app.vectors.delete_documents([new])
        await app.flush_vectors()
        # In the event loop's own thread: the queue's workers cannot run before it returns.
        report = check(app, repair=True)
        repaired = {(f.kind, f.document_id): f.repaired for f in report.findings}
        assert repaired[("missing_vectors", new)]
        assert not repaired[("replaced_version", old)]  # left for the rebuild to decide
        assert app.repositories.documents.get(old).status == "completed"
        assert app.repositories.documents.get(new).status == "pending"  # until it completes

    asyncio.run(_with_app(tmp_path / "data", crashed_then_repaired))


def test_a_restart_finishes_a_replacement_a_crash_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    _die_before_removing(monkeypatch)
    old, new = asyncio.run(_with_app(data, _replaced_but_left))
    monkeypatch.undo()

    async def restarted(app: EagleApp) -> None:
        assert app.repositories.documents.find(old) is None
        assert app.repositories.documents.get(new).status == "completed"
        assert _searchable(app, "aardvarks") == set()
        assert _searchable(app, "pangolins") == {new}

    asyncio.run(_with_app(data, restarted))
    code, final = _doctor(data)
    assert (code, final["findings"], final["documents"]) == (0, [], 1)


def _dead_owner() -> str:
    """The lease owner id of a process of this host that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{host_prefix()}{child.pid}:deadbeef"


async def _cancelled_then_killed(app: EagleApp, monkeypatch: pytest.MonkeyPatch) -> str:
    """A cancel that lands once the attempt wrote its vectors, and the process killed before
    the stopped attempt undid them: the task and document are failed, the vectors stay, and
    the lease the cancel left the attempt names a process that is gone."""
    app.repositories.knowledge_bases.create("docs")
    pipeline = app.pipeline
    ingest = pipeline._ingest

    async def ingest_then_cancel(task_id: str, *args: Any, **kwargs: Any) -> Any:
        done = await ingest(task_id, *args, **kwargs)
        cancel_task(app.repositories.tasks, task_id)  # POST /tasks/{id}/cancel, just now
        return done

    async def killed(task_id: str, document: Any, exc: Exception, held: Any) -> Any:
        return PipelineResult(document.id, "failed", error="killed", stopped=True)

    monkeypatch.setattr(pipeline, "_ingest", ingest_then_cancel)
    monkeypatch.setattr(pipeline, "_stopped", killed)
    text = b"# Wombats\n\nThe cancelled document talks about wombats.\n"
    submission = app.ingest.submit_file(
        kb_name="docs", filename="cancelled.md", stream=io.BytesIO(text)
    )
    await app.queue.join()  # type: ignore[attr-defined]
    await app.flush_vectors()
    monkeypatch.undo()
    task = app.repositories.tasks.get(submission.job_id)
    assert (task.status, task.error, task.lease_owner is not None) == ("failed", CANCELLED, True)
    with app.database.session() as session:  # the attempt's process: killed with the server
        session.execute(
            update(TaskRow).where(TaskRow.id == task.id).values(lease_owner=_dead_owner())
        )
    assert _searchable(app, "wombats") == {submission.document_id}
    return submission.job_id


def test_a_restart_undoes_a_cancelled_attempt_whose_process_was_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    job = asyncio.run(_with_app(data, lambda app: _cancelled_then_killed(app, monkeypatch)))
    code, report = _doctor(data)
    assert [f["kind"] for f in report["findings"]] == ["failed_with_vectors"]

    async def restarted(app: EagleApp) -> None:
        assert _searchable(app, "wombats") == set()
        task = app.repositories.tasks.get(job)
        assert (task.status, task.lease_owner, task.lease_expires_at) == ("failed", None, None)
        assert "its writes were undone" in task.log[-1]

    asyncio.run(_with_app(data, restarted))
    code, final = _doctor(data)
    assert (code, final["findings"]) == (0, [])
