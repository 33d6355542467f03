"""Carry a namespace between stores: ``migrate-store`` (store to store) and export / import."""
