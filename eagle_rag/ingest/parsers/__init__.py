"""Core's Parser components, one module per format family."""
