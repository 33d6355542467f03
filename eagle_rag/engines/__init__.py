"""KnowledgeEngine components: the built-in ``eagle`` engine and bridges to external services."""
