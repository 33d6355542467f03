"""Retrievers for other frameworks, over :mod:`eagle_rag.client` (no HTTP code of their own):
:mod:`eagle_rag.integrations.llamaindex` (``pip install eagle-rag[llamaindex]``) and
:mod:`eagle_rag.integrations.langchain` (``pip install eagle-rag[langchain]``)."""
