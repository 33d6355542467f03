"""Readers for semantic-layer files: each turns bytes into a FileCatalog of typed objects."""
