"""What the plugin learns from the corpus: abbreviations ("long form (SHORT)" pairs found in
ingested text) and how many chunks name each entity (for entity weights, IDF-style).

Pairs are found with the Schwartz-Hearst rule (PSB 2003): the short form is 2-10 characters
in parentheses, with a letter and an upper-case letter; its characters occur, in order and from
the right, in the words just before it, its first character starting a word. The book keeps,
per short form, the long form seen most often, and persists to a JSON file so what one ingest
learned serves later queries after a restart. Entity counts only grow (deleting documents
does not lower them): they weigh entities against each other, where that drift is harmless.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_PAREN = re.compile(r"\(([^()]{2,10})\)")
_WORD = re.compile(r"\S+")
MAX_SHORT_FORMS = 50_000  # a corpus cannot grow the book without bound
MAX_LONG_CHARS = 120
SAVE_INTERVAL_S = 10.0


@dataclass(frozen=True, slots=True)
class Abbreviation:
    """One learned pair and how often the corpus used it."""

    short: str
    long: str
    count: int = 1


def find_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(short, long) pairs written as "long form (SHORT)" in ``text``."""
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _is_short_form(short):
            continue
        before = _WORD.findall(text[max(0, match.start() - 200) : match.start()])
        window = before[-min(len(short) + 5, 2 * len(short)) :]
        long = _long_form(short, " ".join(window))
        if long and len(long) <= MAX_LONG_CHARS:
            yield short, long


def _is_short_form(short: str) -> bool:
    if " " in short.strip() or not short[0].isalnum():
        return False
    return any(c.isalpha() for c in short) and any(c.isupper() for c in short)


def _long_form(short: str, window: str) -> str | None:
    """Walk the short form's characters right to left through the window (Schwartz-Hearst)."""
    letters = [c.lower() for c in short if c.isalnum()]
    position = len(window) - 1
    for index in range(len(letters) - 1, -1, -1):
        wanted = letters[index]
        while position >= 0:
            here = window[position].lower()
            at_word_start = position == 0 or not window[position - 1].isalnum()
            if here == wanted and (index > 0 or at_word_start):
                break
            position -= 1
        if position < 0:
            return None
        position -= 1
    start = window.rfind(" ", 0, position + 1) + 1
    long = window[start:].strip(" ,;:")
    if len(long) <= len(short) or long.lower().startswith(short.lower()):
        return None
    return long


class AbbreviationBook:
    """Short form → its most frequent long form, shared by ingest and query; thread-safe."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._counts: dict[str, dict[str, int]] = {}
        self._best: dict[str, str] = {}
        self._entity_chunks: dict[str, int] = {}
        self.chunks = 0
        self._saved_at = time.monotonic()
        if path is not None and path.is_file():
            self._load(path)

    def __len__(self) -> int:
        return len(self._best)

    def long_form(self, short: str) -> str | None:
        return self._best.get(short)

    def items(self) -> list[Abbreviation]:
        with self._lock:
            return [Abbreviation(s, lf, self._counts[s][lf]) for s, lf in self._best.items()]

    def learn(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Count pairs; returns the (short, long) pairs whose best long form changed."""
        changed: list[tuple[str, str]] = []
        with self._lock:
            for short, long in pairs:
                if short not in self._counts and len(self._counts) >= MAX_SHORT_FORMS:
                    continue
                forms = self._counts.setdefault(short, {})
                forms[long] = forms.get(long, 0) + 1
                best = max(forms, key=lambda lf: (forms[lf], lf))
                if self._best.get(short) != best:
                    self._best[short] = best
                    changed.append((short, best))
        return changed

    def observe_entities(self, concept_ids: Iterable[str]) -> None:
        """Count one chunk that names these entities."""
        with self._lock:
            self.chunks += 1
            for concept_id in set(concept_ids):
                self._entity_chunks[concept_id] = self._entity_chunks.get(concept_id, 0) + 1

    def idf(self, concept_id: str) -> float:
        """log(1 + chunks / chunks naming it): rare entities weigh more; unseen ones most."""
        seen = self._entity_chunks.get(concept_id, 0)
        return math.log(1.0 + (self.chunks + 1) / (seen + 1))

    def save_if_due(self, interval_s: float = SAVE_INTERVAL_S) -> None:
        """Save at most every ``interval_s`` seconds: writing per document would cost ingest
        time in proportion to the book's size (the last changes are saved on unload)."""
        if time.monotonic() - self._saved_at >= interval_s:
            self.save()

    def save(self) -> None:
        """Write the book atomically (a crash mid-write leaves the previous file)."""
        if self._path is None:
            return
        with self._lock:
            self._saved_at = time.monotonic()
            data = {
                "version": 1,
                "counts": self._counts,
                "entity_chunks": self._entity_chunks,
                "chunks": self.chunks,
            }
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            temporary.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
            temporary.replace(self._path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text("utf-8"))
            counts = data["counts"]
        except (OSError, ValueError, KeyError, TypeError):
            return  # a damaged book is relearned from the next ingests, never fatal
        self._entity_chunks = {
            str(k): int(v) for k, v in dict(data.get("entity_chunks", {})).items()
        }
        self.chunks = int(data.get("chunks", 0))
        for short, forms in counts.items():
            if isinstance(forms, dict):
                for long, count in forms.items():
                    self.learn([(str(short), str(long))] * max(1, int(count)))
