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
from eagle_rag.retrieval.page_labels import LABEL_VOTE, captioned_pages, named_labels
from eagle_rag.retrieval.pages import (
    NAMED_VISUAL_WEIGHT,
    VISUAL_WEIGHT,
    page_shares,
    rank_pages,
    visual_weight_for,
)
from tests.api.server import RunningServer, running_server, wait_for_task
from tests.ingest import visual_docs as vd

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


def test_a_document_without_pages_is_told_not_searched(server: RunningServer) -> None:
    """An HTML page's page search answered `pages: []`, which reads as "no page answers"."""
    with server.client() as http:
        job = http.post(
            "/ingest",
            data={"kb_name": "reports"},
            files={"file": ("faq.html", b"<h1>FAQ</h1><p>Cranes need a permit.</p>", "text/html")},
        ).json()
        assert wait_for_task(http, job["job_id"])["status"] == "completed"
        refused = http.post(
            f"/documents/{job['document_id']}/pages/search", json={"query": "crane"}
        )
    assert refused.status_code == 400
    assert "'faq.html' has no pages (a text/html document)" in refused.json()["message"]
    assert "/search" in refused.json()["message"]


def _passage(rank: int, pages: tuple[int, ...], boxes: list[dict[str, object]]) -> Passage:
    return Passage(
        rank, f"c{rank}", "text", "doc", pages, "d", "f.pdf", "kb", "eagle_text", "text",
        1.0 / rank, metadata={"boxes": boxes},
    )  # fmt: skip


def _visual(rank: int, page: int) -> Passage:
    box = {"page": page, "bbox": [0.1, 0.2, 0.8, 0.5]}
    return Passage(
        rank, f"v{rank}", "Figure 1: output", "doc", (page,), "d", "f.pdf", "kb",
        "eagle_visual", "image", 1.0 / rank, metadata={"fields": {"boxes": [box]}},
    )  # fmt: skip


def test_a_visual_hit_votes_for_its_page() -> None:
    text = [_passage(1, (5,), []), _passage(2, (9,), [])]
    assert [p.page for p in rank_pages(text, limit=2)] == [5, 9]
    # The chart on page 9 is the best visual hit: its vote lifts page 9 over page 5.
    visuals = [_visual(1, 9), _visual(2, 7)]
    ranked = rank_pages(text, limit=3, visuals=visuals, visual_weight=NAMED_VISUAL_WEIGHT)
    assert [p.page for p in ranked] == [9, 5, 7]
    assert ranked[0].score == pytest.approx(1 / 2 + NAMED_VISUAL_WEIGHT)
    # By default a visual vote is worth VISUAL_WEIGHT of a text vote at the same rank.
    lifted = rank_pages(text, limit=3, visuals=visuals)
    assert lifted[1].page == 9 and lifted[1].score == pytest.approx(1 / 2 + VISUAL_WEIGHT)
    assert [e.chunk_id for e in ranked[0].passages] == ["c2", "v1"]
    assert ranked[0].to_dict()["evidence"][1]["boxes"] == [
        {"page": 9, "bbox": [0.1, 0.2, 0.8, 0.5]}
    ]
    ignored = rank_pages(text, limit=3, visuals=[_visual(1, 9)], visual_weight=0.0)
    assert [p.page for p in ignored][:2] == [5, 9]
    with pytest.raises(ValueError):
        rank_pages(text, limit=3, visual_weight=-1)


def test_a_question_that_names_a_picture_weighs_visual_hits_fully() -> None:
    assert visual_weight_for("How many green bars appear in Figure 1?") == NAMED_VISUAL_WEIGHT
    assert visual_weight_for("In the table at page 28, which signal is slowest?") == 1.0
    assert visual_weight_for("How many pie charts are there?") == NAMED_VISUAL_WEIGHT
    assert visual_weight_for("表 2 中的数据") == NAMED_VISUAL_WEIGHT
    assert visual_weight_for("Why did the turbine blade crack?") == VISUAL_WEIGHT
    assert visual_weight_for("Who configured the tablespoon settings?") == VISUAL_WEIGHT


def _text(rank: int, page: int, text: str) -> Passage:
    return Passage(
        rank, f"t{rank}", text, "doc", (page,), "d", "f.pdf", "kb", "eagle_text", "text",
        1.0 / rank,
    )  # fmt: skip


def test_a_named_figure_sends_a_vote_to_the_page_printing_its_caption() -> None:
    assert named_labels("How many green bars appear in Figure 1?") == {("figure", "1")}
    assert named_labels("Compare Fig. 2 with table 10 and 图 3") == {
        ("figure", "2"),
        ("table", "10"),
        ("figure", "3"),
    }
    assert named_labels("Which table lists the signals?") == frozenset()
    passages = [
        _text(1, 4, "As Figure 1 shows, accuracy rises with the step-back question."),
        _text(2, 7, "Results of Figure 12: errors by kind."),
        _text(3, 2, "Intro text. Figure 1: Strong performance of the method on every task."),
        _text(4, 9, "Table 1. Datasets used in this paper."),
    ]
    labels = named_labels("How many green bars appear in Figure 1?")
    assert captioned_pages(passages, labels) == {2}  # a mention and Figure 12 are not it
    assert captioned_pages(passages, named_labels("What is in table 1?")) == {9}
    assert captioned_pages(passages, frozenset()) == set()
    plain = rank_pages(passages, limit=4)
    assert plain[0].page == 4
    ranked = rank_pages(passages, limit=4, labels=labels)
    assert ranked[0].page == 2 and ranked[0].score == pytest.approx(1 / 3 + LABEL_VOTE)


@pytest.fixture(scope="module")
def report_id(server: RunningServer, document_id: str) -> str:
    with server.client() as http:
        answer = http.post(
            "/ingest", data={"kb_name": "reports"}, files={"file": ("wind.pdf", vd.report_pdf())}
        )
        assert answer.status_code == 202, answer.text
        task = wait_for_task(http, answer.json()["job_id"], timeout=180)
        assert task["status"] == "completed", task
        return str(task["document_id"])


def test_a_figure_question_finds_the_figures_page_with_the_figure_as_evidence(
    server: RunningServer, report_id: str
) -> None:
    with server.client() as http:
        answer = http.post(
            f"/documents/{report_id}/pages/search",
            json={"query": "Which figure shows turbine output by region?", "top_k": 2},
        )
    assert answer.status_code == 200, answer.text
    best = answer.json()["pages"][0]
    assert best["page"] == 1
    [figure] = [e for e in best["evidence"] if e["type"] == "image"]
    assert vd.FIGURE_CAPTION in figure["text"]
    assert [b["page"] for b in figure["boxes"]] == [1]


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


def _found(rank: int, page: int, relevance: float) -> Passage:
    return Passage(
        rank, f"r{rank}", "text", "doc", (page,), "d", "f.pdf", "kb", "eagle_text", "text",
        relevance, scores={"relevance": relevance},
    )  # fmt: skip


def test_passages_that_only_fill_the_depth_do_not_outvote_the_answer() -> None:
    """A two-page scan searched 30 deep: every chunk is "found", so page 1's five unrelated
    chunks (ranks 2-6) outvoted the one page holding the answer by reciprocal rank alone."""
    filler = [_found(rank, 1, 0.35) for rank in range(2, 7)]
    ranked = rank_pages([_found(1, 2, 0.8), *filler], limit=2)
    assert [p.page for p in ranked] == [2, 1]
    # Passages near the best one still corroborate: three of them outrank it.
    agreeing = [_found(rank, 1, 0.78) for rank in range(2, 5)]
    assert [p.page for p in rank_pages([_found(1, 2, 0.8), *agreeing], limit=2)] == [1, 2]
