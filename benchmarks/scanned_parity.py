"""Scans vs text on scanned-dev: retrieval parity, OCR character error rate, OCR throughput.

For each language folder (``en``, ``zh``: ``text/*.md``, ``pdf/*.pdf`` image-only, ``jpg/*.jpg``,
``queries.jsonl``, ``qrels/test.tsv``), on the first ``--docs`` documents (by id) and the
queries judged on them, in one run (OCR costs seconds a page on a shared 2-core machine, so the
other documents of the folder join every corpus as text: distractors that cost no OCR):

- `Evaluator` (the code behind ``eagle-rag eval --files``) ingests each version through the
  real pipeline and scores document-level retrieval. Bar: nDCG@10 of the PDF and JPEG versions
  >= 0.95 x the text version's.
- CER: the text the pipeline parsed from each PDF / JPEG during that ingest (recorded by an
  observer on BUILD_STRUCTURE that abstains, so Core builds the structure as always) against the
  Markdown it was typeset from (NFKC; whitespace removed for Chinese, collapsed for English;
  Markdown heading marks dropped). Bar: <= 2%.
- Throughput: pages/s of our image parser (orientation + layout + OCR + structure) vs raw
  rapidocr (one onnxruntime thread each) on the first ``--throughput-pages`` JPEG pages,
  interleaved page by page so machine load hits both alike. Bar: >= 0.8. Raw rapidocr's CER and
  ours on those same pages are shown beside it.

    .venv/bin/python -m benchmarks.scanned_parity ../shared/datasets/scanned-dev --docs 50

``--throughput-only`` runs the throughput pass alone (a few pages, no retrieval).
``--cer-only`` skips retrieval and reads each JPEG and PDF with the parsers the pipeline uses
(ImageParser, PdfParser), printing the running CER after every document: on a loaded machine
the OCR of a full folder takes longer than a session, and what was read is then still a result.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import tempfile
import time
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from eagle_rag.bootstrap import bootstrap
from eagle_rag.evaluation.beir import Dataset, load_dataset
from eagle_rag.evaluation.runner import Evaluator
from eagle_rag.ingest.detect import JPEG, PDF
from eagle_rag.ingest.parsers.base import ParseContext
from eagle_rag.ingest.parsers.image import ImageParser
from eagle_rag.ingest.parsers.pdf import PdfParser
from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.plugins import hooks
from eagle_rag.plugins.payloads import DocumentSource, ParseResult
from eagle_rag.settings import load_settings

FORMATS = ("text", "pdf", "jpg")


def subset(dataset: Dataset, ids: set[str], distractors: Dataset) -> Dataset:
    """The ``ids`` documents in this format, every other document as text (distractors that
    cost no OCR), and only the queries judged on ``ids``."""
    corpus = tuple(d for d in dataset.corpus if d.id in ids) + tuple(
        d for d in distractors.corpus if d.id not in ids
    )
    qrels = {
        q: {d: g for d, g in docs.items() if d in ids}
        for q, docs in dataset.qrels.items()
        if any(d in ids and g > 0 for d, g in docs.items())
    }
    return replace(
        dataset, corpus=corpus, qrels=qrels, queries={q: dataset.queries[q] for q in qrels}
    )


def edit_distance(a: str, b: str) -> int:
    """Levenshtein, one numpy row per character of ``a``."""
    if not a or not b:
        return max(len(a), len(b))
    codes = np.array([ord(c) for c in b])
    ramp = np.arange(len(b) + 1)
    row = ramp.copy()
    for i, ch in enumerate(a, start=1):
        substitute = row[:-1] + (codes != ord(ch))
        delete = row[1:] + 1
        best = np.empty_like(row)
        best[0] = i
        best[1:] = np.minimum(substitute, delete)
        # insertion runs along the row: best[j] = min_k<=j (best[k] + j - k)
        row = np.minimum.accumulate(best - ramp) + ramp
    return int(row[-1])


def normalise(text: str, language: str) -> str:
    text = unicodedata.normalize("NFKC", re.sub(r"^#+\s*", "", text, flags=re.MULTILINE))
    return re.sub(r"\s+", "", text) if language == "zh" else " ".join(text.split())


def reading(parsed: ParseResult) -> str:
    return "\n".join(s.heading or s.content for s in parsed.sections)


def cer(texts: dict[str, str], folder: Path, language: str) -> float:
    """Characters wrong per reference character over every document read."""
    errors = total = 0
    for doc_id, text in texts.items():
        reference = normalise((folder / "text" / f"{doc_id}.md").read_text("utf-8"), language)
        errors += edit_distance(normalise(text, language), reference)
        total += len(reference)
    return round(errors / total, 4) if total else 0.0


def ocr_pass(folder: Path, ids: list[str], language: str) -> dict[str, Any]:
    from PIL import Image
    from rapidocr import RapidOCR

    raw = RapidOCR(
        params={
            "Global.log_level": "error",
            "EngineConfig.onnxruntime.intra_op_num_threads": 1,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }
    )
    engine = OcrEngine()
    engine.warm()
    raw(np.zeros((64, 64, 3), dtype=np.uint8))
    images = ImageParser(engine)
    ours_s = raw_s = 0.0
    texts: dict[str, dict[str, str]] = {"ours": {}, "raw": {}}
    for doc_id in ids:
        jpg = (folder / "jpg" / f"{doc_id}.jpg").read_bytes()
        started = time.perf_counter()
        ours = images.parse(ParseContext(jpg, f"{doc_id}.jpg", JPEG))
        ours_s += time.perf_counter() - started
        with Image.open(folder / "jpg" / f"{doc_id}.jpg") as image:
            array = np.asarray(image.convert("RGB"))[:, :, ::-1]
        started = time.perf_counter()
        plain = raw(array)
        raw_s += time.perf_counter() - started
        texts["ours"][doc_id] = reading(ours)
        texts["raw"][doc_id] = "\n".join(getattr(plain, "txts", None) or ())
    return {
        "pages": len(ids),
        "cer_same_pages": {k: cer(v, folder, language) for k, v in texts.items()},
        "ours_pages_per_s": round(len(ids) / ours_s, 3),
        "raw_pages_per_s": round(len(ids) / raw_s, 3),
        "throughput_ratio": round(raw_s / ours_s, 3),
    }


def cer_only(folder: Path, ids: list[str], language: str) -> dict[str, Any]:
    """CER of every JPEG and PDF as the pipeline's parsers read them, printed as it goes."""
    engine = OcrEngine()
    engine.warm()
    parsers = {"jpg": (ImageParser(engine), JPEG), "pdf": (PdfParser(engine), PDF)}
    texts: dict[str, dict[str, str]] = {"jpg": {}, "pdf": {}}
    for doc_id in ids:
        for fmt, (parser, mime) in parsers.items():
            data = (folder / fmt / f"{doc_id}.{fmt}").read_bytes()
            texts[fmt][doc_id] = reading(parser.parse(ParseContext(data, f"{doc_id}.{fmt}", mime)))
        so_far = {fmt: cer(t, folder, language) for fmt, t in texts.items()}
        print(
            f"{language} {len(texts['jpg'])}/{len(ids)} {doc_id}: CER so far jpg "
            f"{so_far['jpg']:.2%}  pdf {so_far['pdf']:.2%}  (this doc jpg "
            f"{cer({doc_id: texts['jpg'][doc_id]}, folder, language):.2%}, pdf "
            f"{cer({doc_id: texts['pdf'][doc_id]}, folder, language):.2%})",
            flush=True,
        )
    return {"cer": so_far, "cer_pages": {fmt: len(t) for fmt, t in texts.items()}}


def observe_parses(app: Any, readings: dict[str, str], folder: Path) -> None:
    """Record the text each scanned file parsed to, and print its CER as it comes (a run cut
    short still shows what it read); abstain so Core builds the structure."""
    language = folder.name

    def record(parsed: ParseResult, source: DocumentSource) -> None:
        if not source.filename.endswith((".pdf", ".jpg")):
            return
        readings[source.filename] = reading(parsed)
        fmt = Path(source.filename).suffix[1:]
        mine = by_format(readings, fmt)
        stem = Path(source.filename).stem
        this = cer({stem: mine[stem]}, folder, language)
        so_far = cer(mine, folder, language)
        print(
            f"{language} {fmt} {len(mine)} read, {stem}: CER {this:.2%} (so far {so_far:.2%})",
            flush=True,
        )

    app.bus.subscribe(hooks.build_structure, record, plugin="scan-benchmark", priority=1000)


async def retrieval_pass(folder: Path, ids: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    readings: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="eagle-scans-") as data:
        app = await bootstrap(load_settings({**os.environ, "EAGLE_DATA_DIR": data}))
        observe_parses(app, readings, folder)
        try:
            text = load_dataset(folder, files=Path("text"))
            for fmt in FORMATS:
                dataset = subset(load_dataset(folder, files=Path(fmt)), ids, text)
                report = await Evaluator(app, top_k=100).run(
                    dataset, modes=("dense", "sparse", "hybrid")
                )
                out[fmt] = report.to_dict()
        finally:
            await app.stop()
    out["readings"] = readings
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--docs", type=int, default=10, help="documents per language")
    parser.add_argument("--languages", default="en,zh")
    parser.add_argument("--throughput-pages", type=int, default=10)
    parser.add_argument("--cer-only", action="store_true")
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="only the OCR throughput pass (ours vs raw rapidocr) on --throughput-pages pages",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"date": datetime.date.today().isoformat(), "docs": args.docs}
    for language in args.languages.split(","):
        folder = args.root / language
        ids = sorted(p.stem for p in (folder / "text").glob("*.md"))[: args.docs]
        started = time.perf_counter()
        if args.cer_only:
            results[language] = cer_only(folder, ids, language)
            continue
        if args.throughput_only:
            results[language] = ocr_pass(folder, ids[: args.throughput_pages], language)
            print(language, json.dumps(results[language]), flush=True)
            continue
        retrieval = asyncio.run(retrieval_pass(folder, set(ids)))
        readings = retrieval.pop("readings")
        ocr = ocr_pass(folder, ids[: args.throughput_pages], language)
        ocr["cer"] = {
            fmt: cer(by_format(readings, fmt), folder, language) for fmt in ("jpg", "pdf")
        }
        ocr["cer_pages"] = {fmt: len(by_format(readings, fmt)) for fmt in ("jpg", "pdf")}
        ocr["worst"] = worst_documents(readings, folder, language)
        results[language] = {"retrieval": retrieval, "ocr": ocr, "readings": readings}
        results[language]["seconds"] = round(time.perf_counter() - started, 1)
        print(summary(language, results[language]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))


def by_format(readings: dict[str, str], fmt: str) -> dict[str, str]:
    """{document id: text} of the files of one format the pipeline parsed."""
    return {Path(name).stem: text for name, text in readings.items() if name.endswith(f".{fmt}")}


def worst_documents(
    readings: dict[str, str], folder: Path, language: str, keep: int = 5
) -> list[tuple[str, float]]:
    """The scans read worst, by their own CER: where to look when the bar is missed."""
    per_file = {
        name: cer({Path(name).stem: text}, folder, language) for name, text in readings.items()
    }
    return sorted(per_file.items(), key=lambda item: -item[1])[:keep]


def summary(language: str, result: dict[str, Any]) -> str:
    lines = [f"{language}:"]
    text_ndcg = {}
    for fmt in FORMATS:
        report = result["retrieval"][fmt]
        for mode in report["modes"]:
            ndcg = mode["metrics"]["ndcg@10"]
            if fmt == "text":
                text_ndcg[mode["mode"]] = ndcg
            ratio = ndcg / text_ndcg[mode["mode"]] if text_ndcg.get(mode["mode"]) else 0.0
            lines.append(
                f"  {fmt:4} {mode['mode']:6} nDCG@10 {ndcg:.4f}  R@10 "
                f"{mode['metrics']['recall@10']:.4f}  vs text {ratio:.3f}  "
                f"({report['documents']} docs, {report['queries']} queries, "
                f"{report['failed_documents']} failed, ingest {report['ingest_seconds']} s)"
            )
    ocr = result["ocr"]
    lines.append(
        f"  CER (pipeline, every scan) jpg {ocr['cer']['jpg']:.2%} ({ocr['cer_pages']['jpg']} "
        f"pages)  pdf {ocr['cer']['pdf']:.2%} ({ocr['cer_pages']['pdf']} pages)"
    )
    worst = ", ".join(f"{name} {value:.2%}" for name, value in ocr["worst"])
    lines.append(f"  worst scans: {worst}")
    same = ocr["cer_same_pages"]
    lines.append(
        f"  CER on the throughput pages: ours {same['ours']:.2%}  raw rapidocr "
        f"{same['raw']:.2%}  ({ocr['pages']} pages)"
    )
    lines.append(
        f"  OCR pages/s: ours {ocr['ours_pages_per_s']}  raw rapidocr {ocr['raw_pages_per_s']}"
        f"  ratio {ocr['throughput_ratio']}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
