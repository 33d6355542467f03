"""Choose the answer model the settings ask for."""

from __future__ import annotations

from eagle_rag.errors import SettingsError
from eagle_rag.generation.extractive import ExtractiveGenerator
from eagle_rag.models.chat import ChatModel, OpenAICompatibleChat
from eagle_rag.settings import ChatSettings


def build_chat_model(config: ChatSettings) -> ChatModel:
    """The configured answer model; ``extractive`` (the offline default) needs none."""
    if config.provider == "extractive":
        return ExtractiveGenerator()
    if not config.base_url or not config.model:
        raise SettingsError("the openai chat provider needs models.chat.base_url and model")
    return OpenAICompatibleChat(
        base_url=config.base_url,
        model=config.model,
        api_key=config.api_key.get_secret_value(),
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
