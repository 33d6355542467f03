"""The extractive answer reads a source's structure: a table row by row under its column names,
a numbered list item whole, and the section headings a chunk stands under."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from eagle_rag.bootstrap import EagleApp
from eagle_rag.generation.extractive import compose
from eagle_rag.generation.headings import is_heading
from eagle_rag.generation.prompt import Reference
from eagle_rag.generation.tables import Table, split_tables
from tests.embedded import app_with_documents

SPECS = """| Model | Power | Weight | Price |
|---|---|---|---|
| SX-3000 | 3.0 kW | 12 kg | 1,200 EUR |
| SX-5000 | 5.0 kW | 17 kg | 1,650 EUR |
| SX-8000 | 8.0 kW | 23 kg | 2,300 EUR |
All models carry the CE mark."""


def test_a_table_row_is_quoted_alone_under_its_column_names() -> None:
    refs = [Reference(1, "Specs", SPECS, "specs.md")]
    assert compose("How heavy is the SX-5000?", refs, "en") == (
        "Model: SX-5000; Power: 5.0 kW; Weight: 17 kg; Price: 1,650 EUR [1]"
    )
    # A column's name counts for its rows: the weight of the SX-3000 is its row, not all three.
    assert compose("weight of the SX-3000", refs, "en").startswith("Model: SX-3000;")
    assert compose("Do the models carry the CE mark?", refs, "en") == (
        "All models carry the CE mark. [1]"
    )


def test_tables_of_scanned_pages_and_escaped_pipes() -> None:
    scanned = "Region | Output | Year\nNorth | 4.2 GWh | 2020\nSouth | 3.1 GWh | 2020"
    refs = [Reference(1, "Report", scanned)]
    assert compose("output of the South region", refs, "en") == (
        "Region: South; Output: 3.1 GWh; Year: 2020 [1]"
    )
    [(_, table)] = list(split_tables("| Key | Meaning |\n|:--|--:|\n| a \\| b | either |"))
    assert table == Table(("Key", "Meaning"), (("a | b", "either"),))
    assert table.row_sentences() == ["Key: a | b; Meaning: either"]


def test_prose_around_a_table_keeps_its_place_and_a_lone_pipe_is_prose() -> None:
    runs = list(split_tables("Before.\n| A | B |\n| 1 | 2 |\nAfter."))
    assert runs == [("Before.", None), ("", Table(("A", "B"), (("1", "2"),))), ("After.", None)]
    assert list(split_tables("Use a | b as the pattern.")) == [("Use a | b as the pattern.", None)]
    assert Table(("Only", "header"), ()).row_sentences() == ["Only; header"]
    assert Table(("Name", ""), (("x", ""), ("", "y"))).row_sentences() == ["Name: x", "y"]


def test_a_numbered_item_is_quoted_with_its_number() -> None:
    steps = "1. Switch off the mains.\n2. Fix the plate with four M8 bolts.\n3. Hang the unit."
    refs = [Reference(1, "Guide/Steps", steps)]
    assert compose("which bolts fix the plate", refs, "en") == (
        "2. Fix the plate with four M8 bolts. [1]"
    )


def test_a_chunks_section_headings_say_what_its_sentences_are_about() -> None:
    """The chunk under "Guide/Warranty" never says "warranty"; its BM25 text has the heading,
    and so now does the extractive answer. The document title (the path's first part) does not
    count: every chunk of the document would share it."""
    refs = [
        Reference(1, "Guide/Care", "Clean the panels twice a year."),
        Reference(2, "Guide/Warranty", "It lasts 10 years from the date of purchase."),
    ]
    assert compose("how long is the warranty", refs, "en") == (
        "It lasts 10 years from the date of purchase. [2]"
    )
    assert compose("what does the guide say", refs, "en").startswith("The documents do not")


def test_a_shared_heading_does_not_make_one_sentence_match_all_another_does() -> None:
    """Under "Firmware" every sentence has the word "firmware": "Version v2.9.8 is no longer
    supported" matched "firmware" and "version", and the sentence that answers, matching
    "firmware" itself, was left out as matching only part of it."""
    text = (
        "## 3 Firmware\nThe current firmware is v2.10.3, released on 2025-03-14. "
        "Version v2.9.8 is no longer supported.\nFirmware updates are installed over USB."
    )
    refs = [Reference(1, "SX-5000 Inverter Manual/3 Firmware", text)]
    answer = compose("What is the firmware version?", refs, "en")
    assert "The current firmware is v2.10.3, released on 2025-03-14. [1]" in answer


FAQ = """**Q: Can I install it myself?**
A: No. Installation must be done by a certified electrician.

**Q: Does it work during a power cut?**
A: Only with the optional backup battery (BB-10).

问：保修期多长？
答：五年，自购买之日起计算。"""


def test_an_faq_answers_its_question_and_never_quotes_it() -> None:
    """The question shares every word with the user's; its answer ("A: No.") shares none. The
    question was quoted as the answer, and the answer left out."""
    refs = [Reference(1, "FAQ", FAQ)]
    assert compose("Can I install it myself?", refs, "en") == (
        "A: No. [1] Installation must be done by a certified electrician. [1]"
    )
    assert compose("does it work in a power cut", refs, "en") == (
        "A: Only with the optional backup battery (BB-10). [1]"
    )
    assert compose("保修期多长？", refs, "zh") == "答：五年，自购买之日起计算。 [1]"


HTML = (
    "<html><body><h1>Price list</h1><table><tr><th>Model</th><th>Price</th></tr>"
    "<tr><td>SX-3000</td><td>1,200 EUR</td></tr><tr><td>SX-8000</td><td>2,300 EUR</td></tr>"
    "</table></body></html>"
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def catalogue(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EagleApp]:
    """The embedded default: one KB with a Markdown spec sheet and an HTML price list."""
    documents = {"specs.md": f"# Specifications\n\n{SPECS}\n", "prices.html": HTML}
    app = await app_with_documents(str(tmp_path_factory.mktemp("catalogue")), "kb", documents)
    yield app
    await app.stop()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("question", "row"),
    [
        ("How heavy is the SX-5000?", "Model: SX-5000; Power: 5.0 kW; Weight: 17 kg;"),
        ("What is the price of the SX-8000 in the price list?", "Model: SX-8000; Price: 2,300"),
    ],
)
async def test_an_answer_from_ingested_tables_quotes_the_row_asked_about(
    catalogue: EagleApp, question: str, row: str
) -> None:
    done = await catalogue.answers.answer(catalogue.answers.request(question, kb_names=("kb",)))
    assert done["answer"].startswith(row), done["answer"]
    assert "SX-3000" not in done["answer"]


def test_a_stop_inside_brackets_or_a_title_does_not_end_the_sentence() -> None:
    album = "《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。专辑中的歌曲都由他创作。"
    refs = [Reference(1, "张雨生", album)]
    assert compose("张雨生的第六张国语专辑是什么？", refs, "zh") == (
        "《卡拉OK.LIVE！‧台北‧我》是张雨生发行的第六张国语专辑。 [1]"
    )
    label = "J Storm releases records for groups (TOKIO, Arashi and Hey! Say! JUMP) in Japan."
    assert compose("which groups does J Storm release", [Reference(1, "J", label)], "en") == (
        f"{label} [1]"
    )
    quoted = "他说：「我明天来。」然后他走了。"
    assert compose("他说明天来吗", [Reference(1, "x", quoted)], "zh") == "他说：「我明天来。」 [1]"
    # A bracket that never closes does not swallow the rest of the text.
    typo = "The pump (see annex is rated 4 kW. The valve is rated 2 bar."
    assert compose("valve rating", [Reference(1, "x", typo)], "en") == (
        "The valve is rated 2 bar. [1]"
    )


def test_a_line_that_only_echoes_the_question_is_not_its_answer() -> None:
    """A Wikipedia-style title line repeats the question's subject and says nothing more."""
    text = "纽西兰鸡毛松\n\n纽西兰鸡毛松是罗汉松科的一种。树高可达55米。"
    refs = [Reference(1, "植物", text)]
    answer = compose("纽西兰鸡毛松有多高？", refs, "zh")
    assert answer.startswith("纽西兰鸡毛松是罗汉松科的一种。 [1]"), answer
    english = [Reference(1, "Specs", "SX-5000\n\nThe SX-5000 weighs 17 kg.")]
    assert compose("SX-5000", english, "en") == "The SX-5000 weighs 17 kg. [1]"
    # A sentence that repeats the question is its confirmation, not an echo.
    confirms = [Reference(1, "Guide", "Warranty: 10 years.")]
    assert compose("Is the warranty 10 years?", confirms, "en") == "Warranty: 10 years. [1]"
    # A line with no full stop that repeats the question is still quoted when it is all there is.
    spec = [Reference(1, "Specs", "Weight: 17 kg\n\nBuilt in Lyon.")]
    assert compose("Is the weight 17 kg?", spec, "en") == "Weight: 17 kg [1]"


def test_a_sentence_two_sources_share_is_quoted_once() -> None:
    """The same file in two KBs: its answer sentence was quoted twice, as [1] and [3]."""
    manual = (
        "To restore factory settings, press and hold the RESET button for 12 seconds. "
        "The default admin password is printed on the label."
    )
    refs = [
        Reference(1, "Router/Resetting", manual, "router.md"),
        Reference(2, "Kettle/Cleaning", "Descale the kettle once a month.", "kettle.md"),
        Reference(3, "Router/Resetting", manual.replace("  ", " "), "router.md"),
    ]
    answer = compose("How do I restore factory settings?", refs, "en")
    assert answer.count("press and hold the RESET button") == 1
    assert "[3]" not in answer


def test_a_question_naming_a_code_is_answered_from_the_sources_that_name_it() -> None:
    """ "What does fault F9 mean?" quoted the inverter manual's E-34 sentence beside the heat
    pump's F9 one: both share "fault" and "mean" with the question."""
    pump = "Fault F9 means the condensate drain is blocked; clear the drain and restart."
    inverter = "Fault code E-34 means the grid voltage is out of range."
    refs = [Reference(1, "HP-12/Fault codes", pump), Reference(2, "SX-5000/Faults", inverter)]
    assert compose("What does fault F9 mean?", refs, "en") == f"{pump} [1]"
    assert compose("What does fault E-34 mean?", refs, "en").startswith("Fault code E-34")
    # The code may be the source's subject, not the sentence's: its path names it.
    weight = Reference(1, "SX-5000 Manual/Specifications", "It weighs 17 kg and mounts on a wall.")
    kettle = Reference(2, "K200 Kettle/Specifications", "The kettle weighs 1.2 kg when empty.")
    assert compose("How much does the SX-5000 weigh?", [kettle, weight], "en") == (
        "It weighs 17 kg and mounts on a wall. [1]"
    )
    # No source names it: the sentences stay as they were.
    assert "E-34" in compose("What does fault Z7 mean?", refs, "en")


def test_a_sentence_that_says_only_its_headings_word_is_still_quoted() -> None:
    """ "It lasts 10 years" matches "warranty" through its heading only, as much as the sentence
    that says "warranty": both are quoted."""
    text = "## Warranty\nThe warranty covers parts and labour. It lasts 10 years from purchase."
    answer = compose("What is the warranty?", [Reference(1, "Guide/Warranty", text)], "en")
    assert (
        answer == "The warranty covers parts and labour. [1] It lasts 10 years from purchase. [1]"
    )


def test_a_dotted_version_is_one_code() -> None:
    """The code of "v3.1.4" was "v3", which every 3.x release's notes name: the answer quoted
    v3.1.0's change beside v3.1.4's."""
    refs = [
        Reference(1, "Release notes/v3.1.0", "Changed the plugin loader."),
        Reference(2, "Release notes/v3.1.4", "Fixes the login timeout."),
    ]
    assert compose("What changed in v3.1.4?", refs, "en") == "Fixes the login timeout. [2]"


def test_an_arabic_faq_question_is_not_quoted_and_hindi_ends_at_a_danda() -> None:
    """The Arabic question mark (؟) was no stop: the FAQ's question line was quoted as its own
    answer. Nor was the danda (।): a Hindi paragraph was quoted whole."""
    faq = (
        "الأسئلة الشائعة\nهل يمكنني تركيب الجهاز بنفسي؟\n"
        "لا، يجب أن يقوم فني معتمد بتركيب الجهاز.\nهل الجهاز مقاوم للماء؟\n"
        "نعم، الجهاز مقاوم للماء حتى عمق مترين.\n"
    )
    answer = compose("هل يمكنني تركيب الجهاز بنفسي؟", [Reference(1, "FAQ", faq)], "en")
    assert "هل يمكنني" not in answer
    assert answer.startswith("لا، يجب أن يقوم فني معتمد بتركيب الجهاز.")
    hindi = "किसान ने खेत में गेहूं बोया। बारिश नहीं हुई इसलिए फसल सूख गई। वजन नापने का यंत्र टूट गया।"
    answer = compose("किसान ने क्या बोया?", [Reference(1, "short.txt", hindi)], "en")
    assert answer == "किसान ने खेत में गेहूं बोया। [1]"


def test_a_line_ending_at_a_danda_is_a_sentence_not_a_heading() -> None:
    assert not is_heading("1. किसान ने खेत में गेहूं बोया।", "", False, "", frozenset())
    assert is_heading("2.1 फसल", "किसान ने खेत में गेहूं बोया।", False, "", frozenset())
    assert is_heading("3.1 المحاصيل", "هل الجهاز مقاوم للماء؟", False, "", frozenset())


def test_a_version_is_answered_from_its_own_release_notes() -> None:
    """ "v3.1.4" was the code "v3": the v3.1.0 notes, which name "v3" too, were quoted."""
    refs = [
        Reference(1, "Release Notes/v3.1.4 (2024-06-19)", "- Security fix in the TLS handshake."),
        Reference(2, "Release Notes/v3.1.0 (2024-01-08)", "- First release with the plugin API."),
    ]
    assert compose("When was v3.1.4 released?", refs, "en") == (
        "- Security fix in the TLS handshake. [1]"
    )
