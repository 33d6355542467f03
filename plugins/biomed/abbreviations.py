"""What the plugin learns from the corpus: abbreviations ("long form (SHORT)" pairs found in
ingested text), per knowledge base, and how many chunks name each entity (for entity weights,
IDF-style).

Pairs are found with the Schwartz-Hearst rule (PSB 2003): the short form is 2-10 characters in
parentheses, with a letter and an upper-case letter; its characters occur, in order and from the
right, in the words just before it, its first character starting a word. The book keeps, per
knowledge base and short form, the long form seen most often (a long form is a document's text:
only callers of that KB may see it or be routed by it), and persists to a JSON file so what one
ingest learned serves later queries after a restart and in the instance's other processes (a
save merges into the file, a reader reloads it when it changed: corpus_file.py). Entity counts
only grow (deleting documents does not lower them): they weigh entities against each other,
where that drift is harmless.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle_rag.sentence_ends import SPACED_STOPS, SPACELESS_STOPS
from plugins.biomed.corpus_file import CorpusCounts, CorpusFile, Stamp

log = logging.getLogger(__name__)

_PAREN = re.compile(r"\(([^()]{2,10})\)")
_WORD = re.compile(r"\S+")
# Where the text before a "(" stops belonging to the long form: a sentence end (a long form is
# found within its sentence, as Schwartz-Hearst do) or another parenthesis.
_BOUNDARY = re.compile(rf"[{SPACED_STOPS};](?=\s)|[{SPACELESS_STOPS}；]|[()]")
MAX_SHORT_FORMS = 50_000  # a corpus cannot grow the book without bound
MAX_LONG_CHARS = 120
SAVE_INTERVAL_S = 10.0
# How often a process looks whether another one saved the corpus file (one stat call).
RELOAD_INTERVAL_S = 2.0


@dataclass(frozen=True, slots=True)
class Abbreviation:
    """One learned pair, the knowledge base that taught it and how often it used it."""

    short: str
    long: str
    count: int = 1
    kb_name: str = ""


# Which knowledge bases' definitions a lookup may use: these names, or None for every KB (a
# caller no key restricts).
KbScope = Collection[str] | None


def find_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(short, long) pairs written as "long form (SHORT)" in ``text``."""
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _is_short_form(short):
            continue
        before = _WORD.findall(_within_sentence(text[max(0, match.start() - 200) : match.start()]))
        window = before[-min(len(short) + 5, 2 * len(short)) :]
        long = _long_form(short, " ".join(window))
        if long and len(long) <= MAX_LONG_CHARS and not _BOUNDARY.search(long):
            yield short, long


def _within_sentence(before: str) -> str:
    """The end of ``before`` after its last sentence end or parenthesis."""
    ends = [boundary.end() for boundary in _BOUNDARY.finditer(before)]
    return before[ends[-1] :] if ends else before


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
    """Short form → its most frequent long form, shared by ingest and query; thread-safe.

    Backed by a corpus file that several processes share (corpus_file.py): the book keeps what
    this process counted since its last save apart (``_pending``), so a save adds exactly that
    to the file, and a reload shows the file's counts plus what is not saved yet.
    """

    def __init__(
        self, path: Path | None = None, *, reload_interval_s: float = RELOAD_INTERVAL_S
    ) -> None:
        self._file = CorpusFile(path) if path is not None else None
        self._reload_interval_s = reload_interval_s
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()  # one save at a time: each merges a disjoint delta
        # kb → short → long → count: the file's counts plus _pending's
        self._counts: dict[str, dict[str, dict[str, int]]] = {}
        self._best: dict[str, dict[str, str]] = {}  # kb → short → its most frequent long form
        self._entity_chunks: dict[str, int] = {}
        self.chunks = 0
        self._pending = CorpusCounts()
        self._stamp: Stamp | None = None  # of the file content last merged in
        self._fresh: list[tuple[str, str, str]] = []  # (kb, short, long) a reload changed
        self.version = 0  # grows whenever a best long form changes (for caches of mentions)
        self._saved_at = self._checked_at = time.monotonic()
        self._deferred: threading.Timer | None = None  # the save a burst of documents left due
        if self._file is not None:
            self._reload(self._file)
            self._fresh.clear()  # the finder indexes items() when it is built

    def __len__(self) -> int:
        return sum(len(shorts) for shorts in self._best.values())

    def long_form(self, short: str, kbs: KbScope = None) -> str | None:
        """The long form the KBs in scope use most for ``short`` (None: none defines it)."""
        with self._lock:  # another thread may be adding a KB
            found = [
                (self._counts[kb][short][long], long)
                for kb, shorts in self._best.items()
                if (kbs is None or kb in kbs) and (long := shorts.get(short)) is not None
            ]
        return max(found)[1] if found else None

    def items(self) -> list[Abbreviation]:
        with self._lock:
            return [
                Abbreviation(s, lf, self._counts[kb][s][lf], kb)
                for kb, shorts in self._best.items()
                for s, lf in shorts.items()
            ]

    def learn(self, kb_name: str, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
        """Count pairs a document of ``kb_name`` wrote; returns the (kb, short, long) whose best
        long form changed."""
        changed: list[tuple[str, str, str]] = []
        pairs = list(pairs)
        if not pairs:
            return changed
        with self._lock:
            mine = self._counts.setdefault(kb_name, {})
            best = self._best.setdefault(kb_name, {})
            pending = self._pending.pairs.setdefault(kb_name, {})
            for short, long in pairs:
                if short not in mine and len(mine) >= MAX_SHORT_FORMS:
                    continue
                for counts in (mine, pending):
                    forms = counts.setdefault(short, {})
                    forms[long] = forms.get(long, 0) + 1
                form = _best_form(mine[short])
                if best.get(short) != form:
                    best[short] = form
                    changed.append((kb_name, short, form))
            self.version += bool(changed)
        return changed

    def observe_entities(self, concept_ids: Iterable[str]) -> None:
        """Count one chunk that names these entities."""
        with self._lock:
            self.chunks += 1
            self._pending.chunks += 1
            for concept_id in set(concept_ids):
                for counts in (self._entity_chunks, self._pending.entity_chunks):
                    counts[concept_id] = counts.get(concept_id, 0) + 1

    def idf(self, concept_id: str) -> float:
        """log(1 + chunks / chunks naming it): rare entities weigh more; unseen ones most."""
        seen = self._entity_chunks.get(concept_id, 0)
        return math.log(1.0 + (self.chunks + 1) / (seen + 1))

    def refresh(self) -> list[tuple[str, str, str]]:
        """Take in what other processes saved (the file is looked at, one ``stat``, at most
        every ``reload_interval_s``); returns the (kb, short, long) best forms that changed
        since the last call, for the entity finder's index."""
        now = time.monotonic()
        if self._file is not None and now - self._checked_at >= self._reload_interval_s:
            self._checked_at = now
            if self._file.stamp() != self._stamp:
                self._reload(self._file)
        if not self._fresh:  # the usual case: no lock taken
            return []
        with self._lock:
            fresh, self._fresh = self._fresh, []
        return fresh

    def save_if_due(self, interval_s: float = SAVE_INTERVAL_S) -> None:
        """Save at most every ``interval_s`` seconds: writing per document would cost ingest
        time in proportion to the book's size. What is not due yet is saved when it is, by a
        timer: the last documents of a burst were otherwise saved only by the next ingest or on
        unload, so the other processes (the API beside Celery workers) never saw their short
        forms, and a crash lost them."""
        wait = interval_s - (time.monotonic() - self._saved_at)
        if wait <= 0:
            self.save()
            return
        with self._lock:
            if self._deferred is not None or not self._pending or self._file is None:
                return
            self._deferred = threading.Timer(wait, self._deferred_save)
            self._deferred.daemon = True
            self._deferred.start()

    def _deferred_save(self) -> None:
        with self._lock:
            self._deferred = None
        try:
            self.save()
        except OSError as exc:  # kept for the next save (save() puts the delta back)
            log.warning("biomed corpus file not saved: %s", exc)

    def close(self) -> None:
        """Save what is left and stop the deferred save (on unload)."""
        with self._lock:
            deferred, self._deferred = self._deferred, None
        if deferred is not None:
            deferred.cancel()
        self.save()

    def save(self) -> None:
        """Add what this process counted since its last save to the file (see corpus_file.py)
        and take in what others added meanwhile; nothing to add writes nothing."""
        if self._file is None:
            return
        with self._save_lock:
            with self._lock:
                self._saved_at = time.monotonic()
                delta, self._pending = self._pending, CorpusCounts()
            if not delta:
                return
            try:
                merged, stamp = self._file.merge(delta, max_short_forms=MAX_SHORT_FORMS)
            except OSError:
                with self._lock:  # kept for the next save
                    delta.add(self._pending, max_short_forms=MAX_SHORT_FORMS)
                    self._pending = delta
                raise
            with self._lock:
                self._take(merged, stamp)

    def _reload(self, file: CorpusFile) -> None:
        disk, stamp = file.read()
        with self._lock:
            self._take(disk, stamp)

    def _take(self, disk: CorpusCounts, stamp: Stamp | None) -> None:
        """The file's counts plus this process's unsaved ones become the book (lock held)."""
        current = disk.copy()
        current.add(self._pending, max_short_forms=MAX_SHORT_FORMS)
        best = {
            kb: {short: _best_form(forms) for short, forms in shorts.items() if forms}
            for kb, shorts in current.pairs.items()
        }
        changed = [
            (kb, s, lf)
            for kb, shorts in best.items()
            for s, lf in shorts.items()
            if self._best.get(kb, {}).get(s) != lf
        ]
        self._counts, self._best = current.pairs, best
        self._entity_chunks, self.chunks = current.entity_chunks, current.chunks
        self._stamp = stamp
        self._fresh.extend(changed)
        self.version += bool(changed)


def _best_form(forms: dict[str, int]) -> str:
    """The long form seen most often (ties: the last in sort order, as always)."""
    return max(forms, key=lambda lf: (forms[lf], lf))
