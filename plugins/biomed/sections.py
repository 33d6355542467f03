"""IMRaD sections of chunks and the intent of queries, from headings and sentence cues.

A chunk's section comes from its heading path when a heading names one ("Methods",
"Results"...); otherwise from cue phrases counted over its text (structured-abstract
vocabulary). A query's intent (treatment, diagnosis, mechanism, prognosis, etiology) comes
from its cue words, and maps to the sections that usually answer it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SECTIONS = ("background", "methods", "results", "conclusions")
UNKNOWN = "unknown"

_HEADINGS: Mapping[str, tuple[str, ...]] = {
    "background": (
        "background",
        "introduction",
        "objective",
        "objectives",
        "aim",
        "aims",
        "purpose",
        "context",
        "rationale",
    ),
    "methods": (
        "method",
        "methods",
        "materials",
        "design",
        "setting",
        "participants",
        "patients",
        "interventions",
        "measurements",
        "procedures",
    ),
    "results": ("result", "results", "findings", "outcomes"),
    "conclusions": ("conclusion", "conclusions", "discussion", "interpretation", "implications"),
}

_CUES: Mapping[str, tuple[str, ...]] = {
    "background": (
        "is a common",
        "is a major",
        "remains unclear",
        "remain unclear",
        "little is known",
        "is unknown",
        "we aimed",
        "the aim of",
        "we sought",
        "to investigate",
        "to determine",
        "to evaluate",
        "to assess",
        "has been implicated",
        "have been implicated",
    ),
    "methods": (
        "were randomized",
        "were randomised",
        "we enrolled",
        "were enrolled",
        "were recruited",
        "we measured",
        "were measured",
        "was performed",
        "were performed",
        "we used",
        "were assigned",
        "retrospective",
        "prospective",
        "cohort of",
        "cross-sectional",
        "double-blind",
        "we analyzed",
        "we analysed",
    ),
    "results": (
        "was associated",
        "were associated",
        "significantly",
        "p <",
        "p<",
        "p =",
        "95% ci",
        "odds ratio",
        "hazard ratio",
        "relative risk",
        "increased",
        "decreased",
        "we found",
        "we observed",
        "was higher",
        "was lower",
    ),
    "conclusions": (
        "in conclusion",
        "we conclude",
        "these findings",
        "these results suggest",
        "our results",
        "our findings",
        "suggest that",
        "may be",
        "support the",
        "further studies",
    ),
}

INTENTS: Mapping[str, tuple[str, ...]] = {
    "treatment": (
        "treat",
        "therap",
        "drug",
        "efficacy",
        "effective",
        "improve",
        "reduc",
        "prevent",
        "dose",
        "trial",
        "vaccin",
        "supplement",
    ),
    "diagnosis": (
        "diagnos",
        "detect",
        "marker",
        "screening",
        "imaging",
        "accuracy",
        "test",
        "sensitivity",
    ),
    "mechanism": (
        "mechanism",
        "pathway",
        "activat",
        "inhibit",
        "bind",
        "regulat",
        "express",
        "signal",
        "mediat",
        "induc",
        "receptor",
        "protein",
        "gene",
    ),
    "prognosis": ("risk", "mortality", "surviv", "outcome", "predict", "associated"),
    "etiology": ("cause", "etiolog", "aetiolog", "origin", "develop", "lead to", "leads to"),
}

# Which sections usually carry the answer to each intent (a soft preference, never a filter).
INTENT_SECTIONS: Mapping[str, tuple[str, ...]] = {
    "treatment": ("results", "conclusions"),
    "diagnosis": ("results", "methods"),
    "mechanism": ("results", "conclusions"),
    "prognosis": ("results", "conclusions"),
    "etiology": ("results", "background"),
}

_WORDS = re.compile(r"[a-z]+")


def section_from_path(path: str) -> str | None:
    """The section a heading in ``path`` names ("doc/Results/..."), innermost first.

    The first part is the document's title, in every format (the chunker roots paths at it,
    and a BEIR-style document's path is its title alone), not a heading: a paper titled
    "Patients with sepsis" is not all methods.
    """
    for part in reversed(path.split("/")[1:]):
        words = _WORDS.findall(part.lower())
        if not words or len(words) > 4:
            continue
        for section, names in _HEADINGS.items():
            if words[0] in names or words[-1] in names:
                return section
    return None


def section_from_text(text: str) -> str:
    """The section whose cue phrases the text uses most (``unknown`` when none)."""
    lowered = text.lower()
    counts = {s: sum(lowered.count(cue) for cue in cues) for s, cues in _CUES.items()}
    best = max(counts, key=lambda s: counts[s])
    return best if counts[best] else UNKNOWN


def chunk_section(path: str, text: str) -> str:
    return section_from_path(path) or section_from_text(text)


def query_intents(text: str) -> tuple[str, ...]:
    """Intents whose cue stems occur in the query, in the order of :data:`INTENTS`."""
    lowered = text.lower()
    return tuple(intent for intent, cues in INTENTS.items() if any(c in lowered for c in cues))
