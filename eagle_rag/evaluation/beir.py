"""Read a BEIR-format dataset: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``.

A corpus may also be a folder of files (PDFs, scans, Markdown, ...): each file is one document
whose corpus id is its stem (``10135926.pdf`` → ``10135926``), ingested as the file itself, so
the same documents can be scored as text, as image-only PDFs and as photos.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle_rag.errors import InvalidInputError


@dataclass(frozen=True, slots=True)
class CorpusDoc:
    id: str
    title: str
    text: str
    path: Path | None = None  # a file corpus: the file to ingest as it is

    @property
    def body(self) -> str:
        """What gets ingested: the title as the first line when there is one."""
        return f"{self.title}\n\n{self.text}" if self.title.strip() else self.text


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    corpus: tuple[CorpusDoc, ...]
    queries: Mapping[str, str]  # only queries with at least one relevant document
    qrels: Mapping[str, Mapping[str, int]]  # query id -> corpus id -> graded relevance
    blank_queries: int = 0  # judged queries with no text: they cannot be searched, so skipped


def load_dataset(folder: Path, *, split: str = "test", files: Path | None = None) -> Dataset:
    """Load and check a dataset; InvalidInputError names the file and line that is wrong.

    ``files``: a folder of files to use as the corpus instead of ``corpus.jsonl`` (relative
    paths are taken inside ``folder``).
    """
    if not folder.is_dir():
        raise InvalidInputError(f"{folder} is not a directory")
    name = folder.name
    if files is not None:
        files = files if files.is_absolute() else folder / files
        corpus = file_corpus(files)
        name = f"{folder.name}/{files.name}"
    else:
        corpus = tuple(
            CorpusDoc(str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or ""))
            for row in _jsonl(folder / "corpus.jsonl", required=("_id", "text"))
        )
        if not corpus:
            raise InvalidInputError(f"{folder / 'corpus.jsonl'} has no documents")
    queries = {
        str(row["_id"]): str(row["text"])
        for row in _jsonl(folder / "queries.jsonl", required=("_id", "text"))
    }
    qrels = _qrels(folder / "qrels" / f"{split}.tsv")
    known = {doc.id for doc in corpus}
    judged = {
        qid: {doc: grade for doc, grade in docs.items() if doc in known}
        for qid, docs in qrels.items()
        if qid in queries
    }
    judged = {qid: docs for qid, docs in judged.items() if any(g > 0 for g in docs.values())}
    blank = [qid for qid in judged if not queries[qid].strip()]
    for qid in blank:
        del judged[qid]
    if not judged:
        raise InvalidInputError(f"{folder}: no query has a relevant document in the corpus")
    return Dataset(name, corpus, {q: queries[q] for q in judged}, judged, len(blank))


def file_corpus(folder: Path) -> tuple[CorpusDoc, ...]:
    """Every visible file in ``folder`` (not recursive), id = stem; two files with one stem
    would answer for the same id, so that is refused."""
    if not folder.is_dir():
        raise InvalidInputError(f"{folder} is not a directory")
    paths = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not paths:
        raise InvalidInputError(f"{folder} has no files")
    seen: dict[str, Path] = {}
    for path in paths:
        if path.stem in seen:
            raise InvalidInputError(
                f"{seen[path.stem].name} and {path.name} share the corpus id {path.stem!r}"
            )
        seen[path.stem] = path
    return tuple(CorpusDoc(stem, "", "", path) for stem, path in seen.items())


def _jsonl(path: Path, *, required: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise InvalidInputError(f"missing {path}")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{number} is not JSON: {exc.msg}") from exc
            missing = [key for key in required if key not in row]
            if missing:
                raise InvalidInputError(f"{path}:{number} lacks {', '.join(missing)}")
            yield row


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query-id  corpus-id  score``, tab-separated, with or without a header line."""
    if not path.is_file():
        raise InvalidInputError(f"missing {path}")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip():
                continue
            if len(parts) < 3:
                raise InvalidInputError(f"{path}:{number} needs query-id, corpus-id and score")
            try:
                grade = int(float(parts[-1]))
            except ValueError:
                if number == 1:
                    continue  # the header line
                raise InvalidInputError(f"{path}:{number}: score is not a number") from None
            qrels.setdefault(parts[0], {})[parts[-2]] = grade
    return qrels
