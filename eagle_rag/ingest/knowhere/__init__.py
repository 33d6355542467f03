"""Knowhere: the semantic structure of a document (section tree) and the chunks cut from it."""
