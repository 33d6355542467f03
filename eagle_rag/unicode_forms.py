"""One Unicode form for what users type and what is stored: a word typed decomposed (macOS
writes "café" as "cafe" plus a combining accent) must equal the same word stored composed."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any


def nfc(value: Any) -> Any:
    """``value`` with every string in NFC: strings, mapping keys and values, list items; other
    values as they are."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, Mapping):
        return {nfc(key): nfc(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [nfc(item) for item in value]
    return value
