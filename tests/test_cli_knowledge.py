from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eagle_rag.cli import app
from eagle_rag.cli.knowledge import expand_paths
from tests.ingest import documents as docs

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"EAGLE_DATA_DIR": str(tmp_path / "data"), "EAGLE_ENCODER_MODE": "deterministic"}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "guide.md").write_text(docs.MARKDOWN)
    (folder / "sub" / "report.pdf").write_bytes(docs.pdf_bytes())
    (folder / "broken.pdf").write_bytes(b"this is not a pdf")
    (folder / ".hidden.txt").write_text("skip me")
    return folder


def test_expand_paths_handles_files_folders_and_globs(corpus: Path) -> None:
    names = {p.name for p in expand_paths([str(corpus)])}
    assert names == {"guide.md", "report.pdf", "broken.pdf"}
    assert [p.name for p in expand_paths([str(corpus / "**" / "*.pdf")])] == [
        "broken.pdf",
        "report.pdf",
    ]
    assert expand_paths([str(corpus / "guide.md"), str(corpus / "guide.md")]) == [
        corpus / "guide.md"
    ]
    assert expand_paths([str(corpus / "nothing-*.txt")]) == []


def test_kb_lifecycle_and_ingest(env: dict[str, str], corpus: Path) -> None:
    created = runner.invoke(
        app, ["kb", "create", "handbook", "--description", "HR", "--chunk-size", "128"], env=env
    )
    assert created.exit_code == 0, created.output
    duplicate = runner.invoke(app, ["kb", "create", "handbook"], env=env)
    assert duplicate.exit_code == 2 and "already exists" in duplicate.stderr

    result = runner.invoke(app, ["ingest", str(corpus), "--kb", "handbook", "--json"], env=env)
    assert result.exit_code == 1, result.output  # one file is refused
    outcomes = {Path(o["path"]).name: o for o in json.loads(result.stdout)}
    assert outcomes["guide.md"]["status"] == "completed" and outcomes["guide.md"]["chunks"] > 0
    assert outcomes["report.pdf"]["status"] == "completed"
    assert outcomes["broken.pdf"]["status"] == "refused"
    assert "claims to be application/pdf" in outcomes["broken.pdf"]["reason"]

    again = runner.invoke(app, ["ingest", str(corpus / "guide.md"), "--kb", "handbook"], env=env)
    assert again.exit_code == 0, again.output
    assert "unchanged" in again.stdout and "Ingest summary" in again.stdout
    # Not "1 of 1 documents ingested" under an empty 0/0 progress bar: nothing was ingested.
    assert "0 of 1 documents ingested, 1 already there unchanged" in again.stdout
    assert "0/0" not in again.stdout

    shown = json.loads(runner.invoke(app, ["kb", "show", "handbook", "--json"], env=env).stdout)
    assert shown["documents"] == 2 and shown["collections_used"] == ["eagle_text"]
    assert shown["creation_settings"] == {"chunk_size": 128, "chunk_overlap": 40}  # default filled
    assert {d["filename"] for d in shown["document_list"]} == {"guide.md", "sub/report.pdf"}

    listed = json.loads(runner.invoke(app, ["kb", "list", "--json"], env=env).stdout)
    assert [k["kb_name"] for k in listed] == ["handbook"]

    deleted = runner.invoke(app, ["kb", "delete", "handbook", "--yes"], env=env)
    assert deleted.exit_code == 0 and "2 documents" in deleted.stdout
    assert json.loads(runner.invoke(app, ["kb", "list", "--json"], env=env).stdout) == []


def test_ingest_can_create_the_kb_and_reports_a_missing_one(
    env: dict[str, str], corpus: Path
) -> None:
    missing = runner.invoke(app, ["ingest", str(corpus), "--kb", "nope"], env=env)
    assert missing.exit_code == 2
    # Said once, before any file is read, with the way out; no summary row per file.
    assert missing.stderr.count("knowledge base 'nope' not found") == 1
    assert "--create" in missing.stderr
    assert "Ingest summary" not in missing.stdout and "guide.md" not in missing.stdout
    as_json = runner.invoke(app, ["ingest", str(corpus), "--kb", "nope", "--json"], env=env)
    assert as_json.exit_code == 2 and as_json.stdout == ""
    listed = json.loads(runner.invoke(app, ["kb", "list", "--json"], env=env).stdout)
    assert listed == []  # nothing was created on the way
    made = runner.invoke(
        app, ["ingest", str(corpus / "guide.md"), "--kb", "fresh", "--create"], env=env
    )
    assert made.exit_code == 0, made.output
    assert "1 of 1 documents ingested" in made.stdout


def test_ingest_with_no_matching_files(env: dict[str, str], tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "none-*.md"), "--kb", "x"], env=env)
    assert result.exit_code == 2 and "no file matches" in result.stderr


def test_a_mistyped_path_is_named_and_nothing_is_ingested(
    env: dict[str, str], corpus: Path
) -> None:
    """ "no files matched" for a path that does not exist; and beside a good one, the good one
    was ingested and the mistyped one forgotten."""
    assert runner.invoke(app, ["kb", "create", "handbook"], env=env).exit_code == 0
    typo = str(corpus / "guied.md")
    result = runner.invoke(
        app, ["ingest", str(corpus / "guide.md"), typo, "--kb", "handbook"], env=env
    )
    assert result.exit_code == 2
    assert f"no such file or folder: {typo!r}" in " ".join(result.stderr.split())
    shown = json.loads(runner.invoke(app, ["kb", "show", "handbook", "--json"], env=env).stdout)
    assert shown["documents"] == 0


def test_kb_show_never_cuts_a_document_id(env: dict[str, str], corpus: Path) -> None:
    """On an 80-column terminal (or a pipe) the ids came out as "b5be436b726e437398bf6…",
    which --doc cannot take."""
    ingest = ["ingest", str(corpus / "guide.md"), "--kb", "handbook", "--create"]
    assert runner.invoke(app, ingest, env=env).exit_code == 0
    shown = json.loads(runner.invoke(app, ["kb", "show", "handbook", "--json"], env=env).stdout)
    [document] = shown["document_list"]
    narrow = runner.invoke(app, ["kb", "show", "handbook"], env={**env, "COLUMNS": "60"})
    assert document["document_id"] in narrow.stdout


def test_kb_show_of_a_missing_kb(env: dict[str, str]) -> None:
    result = runner.invoke(app, ["kb", "show", "ghost"], env=env)
    assert result.exit_code == 2 and "not found" in result.stderr


def test_the_summary_shows_file_names_and_wraps_reasons(
    env: dict[str, str], tmp_path: Path
) -> None:
    scans = tmp_path / "data-volume" / "customer-archive" / "scans" / "2026"
    (scans / "batch").mkdir(parents=True)
    for n in range(3):
        (scans / f"pn-{n:04}.md").write_text(f"# Part {n}\n\nPart number {n} is a gasket.")
    (scans / "batch" / "pn-broken.pdf").write_bytes(b"this is not a pdf")
    narrow = {**env, "COLUMNS": "72"}
    result = runner.invoke(app, ["ingest", str(scans), "--kb", "parts", "--create"], env=narrow)
    assert result.exit_code == 1, result.output  # the broken one is refused
    out = result.stdout
    for n in range(3):
        assert f"pn-{n:04}.md" in out
    assert "batch/pn-broken.pdf" in out  # relative to the folder the files share
    assert str(scans) not in out and "customer-archive" not in out
    reason = "claims to be application/pdf"
    rows = [line for line in out.splitlines() if "│" in line]
    reason_cells = " ".join(line.split("│")[4].strip() for line in rows if line.count("│") >= 5)
    assert reason in " ".join(reason_cells.split())  # wrapped over lines, never cut
    assert max(len(line) for line in out.splitlines()) <= 72


def test_display_names_are_relative_to_the_current_folder_when_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle_rag.cli.knowledge import display_names

    (tmp_path / "a" / "b").mkdir(parents=True)
    one, two = tmp_path / "a" / "x.md", tmp_path / "a" / "b" / "y.md"
    monkeypatch.chdir(tmp_path)
    assert display_names([one, two]) == {one: "a/x.md", two: "a/b/y.md"}
    monkeypatch.chdir(tmp_path / "a" / "b")
    assert display_names([one, two]) == {one: "x.md", two: "b/y.md"}
    assert display_names([]) == {}


def test_documents_are_named_inside_the_folder_the_files_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle_rag.cli.knowledge import document_names

    (tmp_path / "proj" / "staging").mkdir(parents=True)
    (tmp_path / "proj" / "marts").mkdir()
    one, two = (
        tmp_path / "proj" / "staging" / "schema.yml",
        tmp_path / "proj" / "marts" / "schema.yml",
    )
    expected = {one: "staging/schema.yml", two: "marts/schema.yml"}
    for cwd in (tmp_path, tmp_path / "proj" / "marts"):
        monkeypatch.chdir(cwd)
        assert document_names([one, two]) == expected
    assert document_names([one]) == {one: "schema.yml"}


def test_tasks_show_and_cancel_on_the_embedded_store(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(docs.MARKDOWN)
    ingested = runner.invoke(
        app, ["ingest", str(tmp_path / "guide.md"), "--kb", "notes", "--create"], env=env
    )
    assert ingested.exit_code == 0, ingested.output
    job_id = asyncio.run(_only_task(env))

    shown = runner.invoke(app, ["tasks", "show", job_id, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    task = json.loads(shown.stdout)
    assert (task["job_id"], task["status"]) == (job_id, "completed")
    refused = runner.invoke(app, ["tasks", "cancel", job_id], env=env)
    assert refused.exit_code == 1
    assert "the task is completed; there is nothing to cancel" in refused.stderr
    unknown = runner.invoke(app, ["tasks", "cancel", "no-such-task"], env=env)
    assert unknown.exit_code == 2 and "not found" in unknown.stderr


def test_tasks_list_finds_the_failed_ones(env: dict[str, str], tmp_path: Path) -> None:
    """An operator had to call GET /tasks?status=failed to see what failed."""
    (tmp_path / "guide.md").write_text(docs.MARKDOWN)
    (tmp_path / "locked.pdf").write_bytes(docs.encrypted_pdf_bytes())  # fails in the worker
    for name in ("guide.md", "locked.pdf"):
        runner.invoke(app, ["ingest", str(tmp_path / name), "--kb", "notes", "--create"], env=env)
    listed = runner.invoke(app, ["tasks", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert sorted(t["status"] for t in json.loads(listed.stdout)) == ["completed", "failed"]
    failed = runner.invoke(app, ["tasks", "list", "--status", "failed", "--kb", "notes"], env=env)
    assert failed.exit_code == 0, failed.output
    [line, reason] = failed.stdout.splitlines()
    assert line.startswith("notes  ") and "  failed  " in line and reason.startswith("error: ")
    # Which file failed, not only a job id.
    assert "  locked.pdf  failed  " in line
    for wrong, said in ((["--kb", "nope"], "not found"), (["--status", "done"], "unknown status")):
        refused = runner.invoke(app, ["tasks", "list", *wrong], env=env)
        assert refused.exit_code == 2 and said in refused.stderr


async def _upload(env: dict[str, str], kb: str, filename: str, data: bytes) -> None:
    """An upload as a REST client names it (a file on disk cannot hold a "/")."""
    from eagle_rag.bootstrap import bootstrap
    from eagle_rag.settings import load_settings

    application = await bootstrap(load_settings(env))
    try:
        application.ingest.submit_file(kb_name=kb, filename=filename, stream=io.BytesIO(data))
        await application.queue.join()  # type: ignore[attr-defined]
    finally:
        await application.stop()


async def _only_task(env: dict[str, str]) -> str:
    from eagle_rag.bootstrap import bootstrap
    from eagle_rag.settings import load_settings

    application = await bootstrap(load_settings(env), start_queue=False)
    try:
        (task,) = application.repositories.tasks.list()
        return task.id
    finally:
        await application.stop()


def test_brackets_in_errors_names_and_descriptions_are_printed_as_written(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Rich read them as markup: the kb_name rule printed as "must match ^{0,63}$"."""
    refused = runner.invoke(app, ["kb", "create", "Bad Name"], env=env)
    assert refused.exit_code == 2
    assert "^[a-z0-9][a-z0-9_-]{0,63}$" in " ".join(refused.output.split())

    description = "drafts [red] and [bold]finals[/bold]"
    created = runner.invoke(
        app, ["kb", "create", "brackets", "--description", description], env=env
    )
    assert created.exit_code == 0, created.output
    note = tmp_path / "notes[v2].md"
    note.write_text("# Notes\n\nThe second version of the notes.\n")
    ingested = runner.invoke(app, ["ingest", str(note), "--kb", "brackets"], env=env)
    assert ingested.exit_code == 0, ingested.output
    shown = runner.invoke(app, ["kb", "show", "brackets"], env=env)
    assert description in shown.stdout and "notes[v2].md" in shown.stdout
    listed = runner.invoke(app, ["kb", "list"], env=env)
    assert "drafts [red] and" in listed.stdout
    # An answer's sources too: an upload named "turbine[/dim].md" crashed `ask` after the
    # answer was printed.
    asyncio.run(_upload(env, "brackets", "turbine[/dim].md", b"# Turbine\n\nBlades: 6 months.\n"))
    asked = runner.invoke(app, ["ask", "How often are turbine blades inspected?"], env=env)
    assert asked.exit_code == 0, asked.output
    assert "turbine[/dim].md" in asked.stdout and "session " in asked.stdout


def test_a_link_leading_out_of_a_folder_is_skipped(corpus: Path, tmp_path: Path) -> None:
    """``docs/notes.txt -> ~/.aws/credentials`` was ingested with the folder, secret and all."""
    secret = tmp_path / "outside_secret.txt"
    secret.write_text("AWS_SECRET_ACCESS_KEY=abc")
    (corpus / "notes.txt").symlink_to(secret)
    (corpus / "sub" / "guide-link.md").symlink_to(corpus / "guide.md")  # stays inside: read
    (corpus / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    names = {p.name for p in expand_paths([str(corpus)])}
    assert names == {"guide.md", "report.pdf", "broken.pdf", "guide-link.md"}
    assert expand_paths([str(corpus / "notes.txt")]) == [corpus / "notes.txt"]  # named: read
    # A glob follows links too: what it matches must stay inside its fixed part (review).
    globbed = {p.name for p in expand_paths([str(corpus / "**" / "*.txt")])}
    assert globbed == set()
    assert {p.name for p in expand_paths([str(corpus / "*")])} == names
