"""The best pages of one document, through the real app over HTTP.

The generated PDF has no outline and one long section that starts on page 1 and runs to page
4; each fact is printed on its own page, so a page ranked by the section's first page (what a
hit used to name) would always be page 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle_rag.retrieval.pack import Passage
from eagle_rag.retrieval.pages import page_shares, rank_pages
from tests.api.server import RunningServer, running_server, wait_for_task

FILLER = (
    "The committee met in the spring and reviewed the usual reports of the year, "
    "which were read, discussed and filed without further remarks. "
)
FACTS = {
    2: "The harbour crane was repainted in bright orange during the autumn works.",
    3: "The turbine blade cracked because salt corrosion weakened its root.",
    4: "The new library opens on Sundays from nine in the morning.",
}


def _report() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.set_font("helvetica", style="B", size=20)
    pdf.cell(0, 12, "Annual Findings", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, FILLER * 6)
    for number in (2, 3, 4):
        pdf.add_page()
        pdf.multi_cell(0, 6, FILLER * 3 + FACTS[number] + " " + FILLER * 3)
    return bytes(pdf.output())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(Path(tmp_path_factory.mktemp("pages"))) as running:
        yield running


@pytest.fixture(scope="module")
def document_id(server: RunningServer) -> str:
    with server.client() as http:
        assert http.post("/knowledge_bases", json={"kb_name": "reports"}).status_code == 201
        answer = http.post(
            "/ingest", data={"kb_name": "reports"}, files={"file": ("findings.pdf", _report())}
        )
        assert answer.status_code == 202, answer.text
        task = wait_for_task(http, answer.json()["job_id"], timeout=180)
        assert task["status"] == "completed", task
        return str(task["document_id"])


@pytest.mark.parametrize(
    ("question", "page"),
    [
        ("Why did the turbine blade crack?", 3),
        ("What colour was the harbour crane painted?", 2),
        ("When does the new library open?", 4),
    ],
)
def test_the_page_holding_the_fact_comes_first(
    server: RunningServer, document_id: str, question: str, page: int
) -> None:
    with server.client() as http:
        answer = http.post(
            f"/documents/{document_id}/pages/search", json={"query": question, "top_k": 3}
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["document_id"] == document_id and body["filename"] == "findings.pdf"
    best = body["pages"][0]
    assert best["page"] == page
    assert len(body["pages"]) <= 3
    scores = [p["score"] for p in body["pages"]]
    assert scores == sorted(scores, reverse=True)
    # The evidence on the page is quoted with its boxes on that very page.
    assert any(FACTS[page].split()[1] in e["text"] for e in best["evidence"])
    boxes = [b for e in best["evidence"] for b in e["boxes"]]
    assert boxes and all(b["page"] == page for b in boxes)


def test_search_hits_name_the_facts_page_not_the_sections_first(
    server: RunningServer, document_id: str
) -> None:
    with server.client() as http:
        found = http.post(
            "/search",
            json={"query": "turbine blade salt corrosion", "kb_name": "reports", "top_k": 3},
        ).json()
    best = found["sources"]["text"][0]
    assert best["page_nums"][0] == 3


def test_bad_page_searches_are_refused(server: RunningServer, document_id: str) -> None:
    with server.client() as http:
        missing = http.post("/documents/nope/pages/search", json={"query": "crane"})
        empty = http.post(f"/documents/{document_id}/pages/search", json={"query": ""})
        too_many = http.post(
            f"/documents/{document_id}/pages/search", json={"query": "crane", "top_k": 500}
        )
        odd = [
            http.post(f"/documents/{document_id}/pages/search", json=body)
            for body in (
                {"query": "x" * 4001},
                {"query": "crane", "depth": 0},
                {"query": "crane", "mode": "visual"},
                {"query": "crane", "page": 3},
                {"top_k": 3},
            )
        ]
        strange = http.post(
            f"/documents/{document_id}/pages/search", json={"query": "\u0000 ⚙️ \ud7ff 𝔘"}
        )
    assert missing.status_code == 404
    assert empty.status_code == 422 and too_many.status_code == 422
    assert [a.status_code for a in odd] == [422] * 5
    assert strange.status_code == 200 and isinstance(strange.json()["pages"], list)


def _passage(rank: int, pages: tuple[int, ...], boxes: list[dict[str, object]]) -> Passage:
    return Passage(
        rank, f"c{rank}", "text", "doc", pages, "d", "f.pdf", "kb", "eagle_text", "text",
        1.0 / rank, metadata={"boxes": boxes},
    )  # fmt: skip


def test_a_passage_votes_mostly_for_the_page_most_of_it_is_on() -> None:
    spanning = _passage(
        1,
        (5, 6),
        [
            {"page": 5, "bbox": [0.1, 0.1, 0.9, 0.8]},
            {"page": 6, "bbox": [0.1, 0.1, 0.9, 0.15]},
        ],
    )
    shares = page_shares(spanning)
    assert shares[5] > 0.9 and abs(sum(shares.values()) - 1) < 1e-9
    assert page_shares(_passage(1, (2, 3), [])) == {2: 0.5, 3: 0.5}
    # Two lower passages agreeing on page 9 outrank one top passage on page 5.
    ranked = rank_pages(
        [_passage(1, (5,), []), _passage(2, (9,), []), _passage(3, (9,), [])], limit=2
    )
    assert [p.page for p in ranked] == [5, 9]
    ranked = rank_pages(
        [
            _passage(1, (5,), []),
            _passage(2, (9,), []),
            _passage(3, (9,), []),
            _passage(4, (9,), []),
        ],
        limit=5,
    )
    assert [p.page for p in ranked] == [9, 5]
    with pytest.raises(ValueError):
        rank_pages([], limit=0)
