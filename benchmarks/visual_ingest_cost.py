"""What PixelRAG visuals cost a text-born PDF: ingest time with visuals on vs text only.

Two embedded apps with the same settings except ``ingest.visuals`` ingest the same PDFs, one
document at a time and interleaved (on, off, off, on, ...), so a shared machine's drifting speed
hits both sides alike. Each document's time is submit → completed through the real pipeline
(parse, structure, chunk, visual extract: figures, ruled tables, tiles of OCR'd
pages; embed; upsert), with the OCR models loaded and warmed before the first document, as a
running service has them. The process's CPU seconds are printed beside (the work visuals add,
whatever runs in parallel). Target (issue 16): visuals on <= 1.3 x text only (wall time).

    nice -n 10 .venv/bin/python -m benchmarks.visual_ingest_cost \\
        ../shared/datasets/longdocs-dev/pdf/STEPBACK.pdf ../shared/datasets/longdocs-dev/pdf/...
"""

from __future__ import annotations

import argparse
import asyncio
import io
import tempfile
import time
from pathlib import Path
from typing import Any

from eagle_rag.bootstrap import EagleApp, bootstrap
from eagle_rag.index import filters as f
from eagle_rag.index.collections import TEXT_COLLECTION, VISUAL_COLLECTION
from eagle_rag.settings import load_settings


async def _app(folder: Path, visuals: bool, mode: str) -> EagleApp:
    settings = load_settings(
        {"EAGLE_DATA_DIR": str(folder), "EAGLE_ENCODER_MODE": mode},
        overrides={"ingest": {"visuals": visuals, "workers": 1}},
    )
    app = await bootstrap(settings)
    app.repositories.knowledge_bases.create("bench")
    # A service loads its OCR models once (production warms them at start, ``ingest.ocr_warm``);
    # warmed here, so the first document timed does not carry a once-per-process model load.
    for parser in app.registries.parsers:
        warm = getattr(parser.component, "warm", None)
        if callable(warm):
            await asyncio.to_thread(warm)
    return app


async def _ingest(
    app: EagleApp, name: str, data: bytes, round_: int
) -> tuple[float, float, int, int]:
    """Wall seconds, this process's CPU seconds, text rows and visual rows of one ingest."""
    started, cpu = time.perf_counter(), time.process_time()
    submission = await asyncio.to_thread(
        app.ingest.submit_file,
        kb_name="bench",
        filename=f"r{round_}-{name}",
        stream=io.BytesIO(data + b"\n%" + str(round_).encode()),  # new bytes: no dedup hit
    )
    await app.queue.join()  # type: ignore[attr-defined]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    document = app.repositories.documents.get(submission.document_id)
    if document.status != "completed":
        raise RuntimeError(f"{name}: {document.error}")
    where = f.eq("document_id", document.id)
    return (
        seconds,
        cpu,
        app.vectors.count(TEXT_COLLECTION, where),
        app.vectors.count(VISUAL_COLLECTION, where),
    )


async def run(paths: list[Path], rounds: int, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as on_dir, tempfile.TemporaryDirectory() as off_dir:
        on, off = await _app(Path(on_dir), True, mode), await _app(Path(off_dir), False, mode)
        try:
            totals = {"on": 0.0, "off": 0.0}
            cpu = {"on": 0.0, "off": 0.0}
            rows = []
            for round_ in range(rounds):
                for index, path in enumerate(paths):
                    data = path.read_bytes()
                    order = [("on", on), ("off", off)]
                    if (round_ + index) % 2:
                        order.reverse()
                    times: dict[str, tuple[float, float, int, int]] = {}
                    for label, app in order:
                        times[label] = await _ingest(app, path.name, data, round_)
                        totals[label] += times[label][0]
                        cpu[label] += times[label][1]
                    rows.append((path.name, times["on"], times["off"]))
                    (on_s, on_cpu, texts, visuals), (off_s, off_cpu) = times["on"], times["off"][:2]
                    print(
                        f"{path.name[:40]:40} on {on_s:7.2f}s ({texts} text + {visuals} visual)"
                        f"  off {off_s:7.2f}s  ratio {on_s / off_s:.2f}"
                        f"  (CPU {on_cpu:.1f}s / {off_cpu:.1f}s = {on_cpu / off_cpu:.2f})",
                        flush=True,
                    )
            ratio = totals["on"] / totals["off"]
            print(f"total on {totals['on']:.2f}s off {totals['off']:.2f}s ratio {ratio:.3f}")
            print(
                f"CPU on {cpu['on']:.1f}s off {cpu['off']:.1f}s ratio {cpu['on'] / cpu['off']:.3f}"
            )
            return {"ratio": ratio, "totals": totals, "cpu": cpu, "rows": rows}
        finally:
            await on.stop()
            await off.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--encoder-mode", default="auto", choices=("auto", "require_native", "deterministic")
    )
    args = parser.parse_args()
    asyncio.run(run(args.pdfs, args.rounds, args.encoder_mode))


if __name__ == "__main__":
    main()
