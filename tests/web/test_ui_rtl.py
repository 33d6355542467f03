"""Right-to-left text (Arabic, Hebrew) is laid out right to left wherever the UI shows it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.server import RunningServer, wait_for_task
from tests.chat_fakes import openai_model, sse
from tests.web.helpers import kb_with_file

pytestmark = pytest.mark.browser

ARABIC = "كتب الطالب الدرس في المكتبة. المكتبة كبيرة جدا.\nعدد الكتب 2500 كتاب."
ENGLISH = "The student wrote the lesson in the library. The library is very large."


@pytest.fixture(scope="module")
def library(server: RunningServer) -> dict[str, str]:
    """One KB with an Arabic and an English text file: their document ids."""
    arabic = kb_with_file(server, "library", "عربي.txt", ARABIC.encode())
    with server.client() as client:
        job = client.post(
            "/ingest", data={"kb_name": "library"}, files={"file": ("en.txt", ENGLISH.encode())}
        )
        assert wait_for_task(client, job.json()["job_id"])["status"] == "completed"
    return {"ar": arabic, "en": str(job.json()["document_id"])}


def _direction(page: Any, selector: str) -> str:
    return str(page.eval_on_selector(selector, "e => getComputedStyle(e).direction"))


@pytest.mark.parametrize(("language", "direction"), [("ar", "rtl"), ("en", "ltr")])
def test_a_documents_chunks_and_title_run_in_their_own_direction(
    page: Any, server: RunningServer, library: dict[str, str], language: str, direction: str
) -> None:
    """Arabic chunk text was laid out left to right: its final "." showed before its first word."""
    page.goto(f"{server.url}/ui/documents/{library[language]}")
    page.wait_for_selector("ol.chunks pre.text")
    assert _direction(page, "ol.chunks pre.text") == direction
    assert _direction(page, "#doc-title") == ("rtl" if language == "ar" else "ltr")


@pytest.mark.parametrize(
    ("answer", "direction"),
    [("يخفض الدواء مستوى السكر [1].", "rtl"), ("The drug lowers blood sugar [1].", "ltr")],
)
def test_an_answer_and_its_question_run_in_their_own_direction_citations_at_the_end(
    page: Any, server: RunningServer, library: dict[str, str], answer: str, direction: str
) -> None:
    page.goto(server.url + "/ui/ask")
    page.check("#kb-picker input[value='library']")
    question = "ما هو الدرس" if direction == "rtl" else "what is the lesson"
    page.fill("#question", question)
    with openai_model(server.eagle, lambda body: sse(answer)):
        page.press("#question", "Enter")
        page.wait_for_selector("#thread .msg.assistant:not([aria-busy]) .answer .cite")
    assert _direction(page, "#thread .msg.user .answer") == direction
    assert _direction(page, "#thread .msg.assistant .answer") == direction
    assert _direction(page, "#thread .sources pre") in ("rtl", "ltr")  # each source its own
    # The [1] closes the sentence: left of its first word in Arabic, right of it in English.
    first_word, cite = page.eval_on_selector(
        "#thread .msg.assistant .answer",
        """e => { const r = document.createRange(); r.setStart(e.firstChild, 0);
                  r.setEnd(e.firstChild, 3); const w = r.getBoundingClientRect();
                  const c = e.querySelector('.cite').getBoundingClientRect();
                  return [w.left + w.width / 2, c.left + c.width / 2]; }""",
    )
    assert (cite < first_word) == (direction == "rtl"), (first_word, cite)
    session = f"#session-list .session:text-is('{question}')"
    page.wait_for_selector(session)
    assert _direction(page, session) == direction
