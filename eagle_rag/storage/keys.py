"""Object keys: ``{namespace}/{part}/...``, built from validated parts so traversal is impossible.

Keys are built, never parsed from user input: every part is checked on its own (no separators, no
dot segments, no control characters, also after percent-decoding), so a hostile filename cannot
climb out of its namespace on a filesystem or collide with another namespace's prefix in S3.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

from eagle_rag.errors import InvalidInputError

MAX_PART_LENGTH = 200
MAX_KEY_LENGTH = 1000


def validate_part(part: str) -> str:
    """Return ``part`` if it is a safe single key segment, else raise InvalidInputError."""
    if not isinstance(part, str) or not part:
        raise InvalidInputError("object key part must be a non-empty string", part=repr(part))
    if len(part) > MAX_PART_LENGTH:
        raise InvalidInputError(
            f"object key part is longer than {MAX_PART_LENGTH} characters", part=part[:40]
        )
    for candidate in {part, unquote(part), unquote(unquote(part))}:
        if candidate in (".", "..") or candidate.strip() in (".", ".."):
            raise InvalidInputError("object key part must not be a dot segment", part=part)
        if "/" in candidate or "\\" in candidate:
            raise InvalidInputError("object key part must not contain a separator", part=part)
        if any(unicodedata.category(ch) == "Cc" for ch in candidate):
            raise InvalidInputError(
                "object key part must not contain control characters", part=repr(part)
            )
    return part


def object_key(namespace: str, *parts: str) -> str:
    """Join validated parts under the namespace: ``object_key("core", "kb", "doc", "a.pdf")``."""
    if not parts:
        raise InvalidInputError("an object key needs at least one part below the namespace")
    key = "/".join(validate_part(p) for p in (namespace, *parts))
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInputError(f"object key is longer than {MAX_KEY_LENGTH} characters")
    return key


def validate_key(key: str) -> str:
    """Check a whole key (e.g. one read back from the catalog) part by part."""
    parts = key.split("/")
    if len(parts) < 2:
        raise InvalidInputError("object key must start with a namespace", key=key)
    return object_key(parts[0], *parts[1:])


def validate_prefix(namespace: str, *parts: str) -> str:
    """A listing or bulk-delete prefix; ends with ``/`` so ``ns`` never matches ``ns2``."""
    return "/".join(validate_part(p) for p in (namespace, *parts)) + "/"
