"""``eagle-rag eval``: retrieval quality and speed on BEIR-format datasets (DESIGN §12)."""
