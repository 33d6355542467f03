"""Model providers: text embedders, offline and OpenAI-compatible."""
