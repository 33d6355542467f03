"""Prompt building (zh / en), citation checks and the extractive generator."""

from __future__ import annotations

import pytest

from eagle_rag.generation.citations import check_citations, one_per_bracket
from eagle_rag.generation.extractive import ExtractiveGenerator, compose
from eagle_rag.generation.prompt import (
    Attachment,
    ImageCaption,
    Reference,
    Turn,
    build_messages,
    detect_language,
)
from eagle_rag.models.chat import GenerationInput

REFS = [
    Reference(1, "Guide/Wiring", "Connect the inverter with copper cables.", "guide.md", (2,)),
    Reference(2, "Guide/Care", "Clean the panels twice a year. Check the bolts.", "guide.md"),
]


@pytest.mark.parametrize(
    ("text", "language"), [("逆变器怎么连接？", "zh"), ("How to wire it?", "en"), ("DC 电源", "zh")]
)
def test_language_follows_the_query(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_english_prompt_numbers_references_and_keeps_history() -> None:
    messages = build_messages(
        "How do I wire the inverter?",
        REFS,
        language="en",
        attachments=[Attachment("notes.txt", "bring gloves")],
        images=[ImageCaption(1, "img-9", 3, "Guide/Wiring", "wiring diagram")],
        history=[Turn("user", "hi"), Turn("assistant", "hello [1]")],
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "cite reference text with its number" in messages[0]["content"]
    body = messages[-1]["content"]
    assert "[1] path: Guide/Wiring | file: guide.md | pages: 2\nConnect the inverter" in body
    assert "[2] path: Guide/Care" in body
    assert "USER ATTACHMENTS\n\n[3] file: notes.txt\nbring gloves" in body  # after [1] [2]
    assert "[1] image_id=img-9, pages=3, section=Guide/Wiring, summary=wiring diagram" in body
    assert body.endswith("QUESTION\n\nHow do I wire the inverter?")


def test_chinese_prompt() -> None:
    messages = build_messages("怎么接线？", REFS[:1], language="zh")
    assert "请用中文回答" in messages[0]["content"]
    assert "【参考文本】\n\n[1] 路径: Guide/Wiring" in messages[-1]["content"]
    empty = build_messages("x", [], language="zh")[-1]["content"]
    assert "【参考文本】\n\n（无）" in empty


def test_citations_in_range_and_out_of_range() -> None:
    report = check_citations("A [1]. B [2][1]. C [7] and [0].", 2)
    assert report.cited == (1, 2, 7, 0)
    assert report.out_of_range == (7, 0) and not report.ok
    assert check_citations("no citations", 0).ok


@pytest.mark.parametrize(
    ("answer", "cited", "out_of_range"),
    [
        ("Facts [1-3].", (1, 2, 3), ()),
        ("Facts [2–5].", (2, 3, 4, 5), (4, 5)),
        ("Facts [1,7] and [1, 2].", (1, 7, 2), (7,)),
        ("事实【9】，还有【1、2】。", (9, 1, 2), (9,)),
        ("Facts [ 3 ] and [1 - 2].", (3, 1, 2), ()),
        ("Too many [1-60], backwards [3-1].", (1, 60, 3), (60,)),
        ("Years [2019-2021], pages [12, 1040], and [2].", (2,), ()),  # ranges of years cite none
        ("Chained [1-2-3], a date [03-04-21].", (), ()),  # raised ValueError: the answer failed
        ("In code `w = [1, 7]` and ```\nx = [9]\n```, cited [2].", (2,), ()),
        ("Not citations: [a], [1-], [-2], [1..3], x[]y.", (), ()),
    ],
)
def test_citations_a_chat_model_writes_in_one_bracket(
    answer: str, cited: tuple[int, ...], out_of_range: tuple[int, ...]
) -> None:
    """Only [n] was read: [1-3] (or with an en dash), [1,7], [1, 2] and 【9】 were neither
    counted as cited nor checked against the sources sent."""
    report = check_citations(answer, 3)
    assert report.cited == cited
    assert report.out_of_range == out_of_range


def test_extractive_answer_cites_the_sentences_it_uses() -> None:
    answer = compose("how often should I clean the panels", REFS, "en")
    assert answer == "Clean the panels twice a year. [2]"
    both = compose("inverter cables and panels", REFS, "en")
    assert both == "Connect the inverter with copper cables. [1] Clean the panels twice a year. [2]"
    assert check_citations(both, len(REFS)).ok


def test_how_long_asks_for_an_amount_and_names_no_topic() -> None:
    """ "How long is the warranty?" quoted "Long names are fine." for sharing "long"."""
    references = [
        Reference(1, "Guide/Names", "Long names are fine. Keep them readable."),
        Reference(2, "note.txt", "The warranty lasts 12 years for the inverter."),
    ]
    answer = compose("How long is the warranty?", references, "en")
    assert answer == "The warranty lasts 12 years for the inverter. [2]"
    assert compose("how long?", references, "en") == "Long names are fine. [1]"


def test_numbers_and_versions_are_not_sentence_ends() -> None:
    """ "firmware 4.2" was cut into "firmware 4." and "2 release adds…", and "3.0 kW" into
    "3. [1] 0 kW": a period ends a sentence only before a space."""
    notes = [
        Reference(1, "notes.txt", "Firmware 4.2 adds VDE support. Install it with Updater 3.1!"),
        Reference(2, "specs.md", "The EI-3000 is rated 3.0 kW. 逆变器需要 2.5 Nm。请拧紧。"),
    ]
    answer = compose("firmware updater", notes, "en")
    assert answer == "Firmware 4.2 adds VDE support. [1] Install it with Updater 3.1! [1]"
    assert compose("EI-3000 rated", notes, "en") == "The EI-3000 is rated 3.0 kW. [2]"
    assert compose("逆变器", notes, "zh") == "逆变器需要 2.5 Nm。 [2]"


def test_sentences_sharing_a_stray_word_are_not_quoted() -> None:
    """The temperature question quoted every sentence with 应 ("should") in it."""
    manual = [
        Reference(1, "储能安全", "电池柜应安装在通风良好的室内，环境温度保持在5至35摄氏度之间。"),
        Reference(2, "运维手册", "绝缘电阻应大于1兆欧。仓库应至少保留两套备件。"),
    ]
    answer = compose("电池柜的环境温度应保持在多少？", manual, "zh")
    assert answer == "电池柜应安装在通风良好的室内，环境温度保持在5至35摄氏度之间。 [1]"


def test_extractive_answer_without_matches_or_sources() -> None:
    assert compose("zebra", REFS, "en").startswith("The documents do not answer this directly.")
    assert compose("zebra", REFS, "en").endswith("[1]")
    assert compose("zebra", [], "zh") == "知识库中没有找到与问题相关的内容。"
    chinese = [Reference(1, "指南/安装", "逆变器需要用铜线连接。支架要固定。")]
    assert compose("逆变器怎么连接", chinese, "zh") == "逆变器需要用铜线连接。 [1]"


async def test_extractive_generator_streams_the_composed_answer() -> None:
    job = GenerationInput("inverter cables", "en", [], REFS)
    pieces = [piece async for piece in ExtractiveGenerator().stream(job)]
    assert len(pieces) > 3
    assert "".join(pieces) == compose("inverter cables", REFS, "en")


def test_extractive_answer_keeps_numbers_with_points_whole() -> None:
    """A point inside a number, version or address is no sentence end: the answer quoted
    "a hedging budget of 4. [1]" and lost the amount the question asked for."""
    references = [
        Reference(
            1,
            "Deck/Market outlook",
            "The board approved a hedging budget of 4.7 million euros for 2024. Spine switches "
            "run firmware 9.3(12). Dr. Lind signed the plan.",
        )
    ]
    budget = compose("What hedging budget did the board approve?", references, "en")
    assert budget == "The board approved a hedging budget of 4.7 million euros for 2024. [1]"
    firmware = compose("Which firmware do spine switches run?", references, "en")
    assert firmware == "Spine switches run firmware 9.3(12). [1]"
    assert compose("Who signed the plan?", references, "en") == "Dr. Lind signed the plan. [1]"


def test_a_blank_line_ends_an_extractive_sentence() -> None:
    """A slide's bullets carry no full stop: the answer quoted them as the start of the
    speaker notes below them."""
    references = [
        Reference(
            1,
            "Deck/Market outlook",
            "Demand growth 3.1% in our regions\nGas prices stabilised\n\n"
            "Speaker notes: the board approved a hedging budget of 4.7 million euros.",
        )
    ]
    answer = compose("What hedging budget did the board approve?", references, "en")
    assert answer == (
        "Speaker notes: the board approved a hedging budget of 4.7 million euros. [1]"
    )


def test_an_extractive_answer_leaves_out_sentences_that_match_only_part_of_a_better_one() -> None:
    """Kestrel's table matches "output", "plant" and "2020" but not "Calder": it was quoted and
    cited as if it supported the answer about Calder."""
    references = [
        Reference(1, "Report/3 Calder", "Output of the Calder plant: 2020 334 GWh, 2021 351 GWh."),
        Reference(2, "Report/11 Kestrel", "Output of the Kestrel plant: 2020 1134 GWh."),
        Reference(3, "Report/3 Calder/3.2", "The Calder plant was commissioned in 1986."),
    ]
    answer = compose("What was the output of the Calder plant in 2020?", references, "en")
    assert answer == "Output of the Calder plant: 2020 334 GWh, 2021 351 GWh. [1]"
    # A sentence that matches another part of the question is kept.
    both = compose("Calder output in 2020 and when was it commissioned?", references, "en")
    assert both.endswith("The Calder plant was commissioned in 1986. [3]")


def test_a_heading_line_is_not_quoted_but_says_what_the_sentences_under_it_are_about() -> None:
    """A section summary is its title, a line break and the opening: flattened, the answer
    quoted "3.2 Maintenance schedule The gearbox oil is changed every two years." """
    summary = Reference(
        1,
        "Manual/3 Service/3.2 Maintenance schedule",
        "3.2 Maintenance schedule\nThe gearbox oil is changed every two years.\n"
        "Sections: Oil; Filters",
    )
    answer = compose("What is the maintenance schedule?", [summary], "en")
    assert answer.startswith("The gearbox oil is changed every two years. [1]")
    assert "3.2" not in answer
    titled = Reference(1, "Manual/Safety rules", "Safety rules\nNever open the nacelle in wind.")
    assert compose("safety rules", [titled], "en") == "Never open the nacelle in wind. [1]"
    marked = Reference(1, "Manual", "## Warranty\nThe warranty lasts five years.")
    assert compose("warranty", [marked], "en") == "The warranty lasts five years. [1]"
    caps = Reference(1, "Manual", "It is sold in Europe.\nWARRANTY TERMS\nIt lasts five years.")
    assert compose("warranty terms", [caps], "en") == "It lasts five years. [1]"
    chinese = Reference(1, "手册", "第三章 维护\n电池柜应保持清洁。")
    assert compose("维护", [chinese], "zh") == "电池柜应保持清洁。 [1]"


def test_lines_of_text_are_not_taken_for_headings() -> None:
    """A wrong guess drops text an answer needs: table rows, a wrapped line that starts with a
    number, a statement in sentence case or of short words, a Chinese article (第三条)."""
    rows = Reference(
        1, "Report", "Output by year.\n2019 4.2 million tonnes\n2020 4.7 million tonnes"
    )
    assert "2020 4.7 million tonnes" in compose("output 2020", [rows], "en")
    wrapped = Reference(
        1,
        "Manual",
        "The pump starts.\n230 volts are applied to the motor windings\nduring start-up.",
    )
    assert compose("pump volts windings", [wrapped], "en").endswith(
        "230 volts are applied to the motor windings during start-up. [1]"
    )
    runs_on = Reference(1, "Report", "It opened in 2019.\n2020 Output Rose By\n4 Percent.")
    assert compose("2020 output", [runs_on], "en") == "2020 Output Rose By 4 Percent. [1]"
    bullet = Reference(1, "Deck", "Gas prices stabilised\nThe board met.")
    assert compose("gas prices", [bullet], "en") == "Gas prices stabilised The board met. [1]"
    short = Reference(1, "Log", "The board met.\nOil was low\nThe pump failed.")
    assert compose("oil low", [short], "en") == "Oil was low The pump failed. [1]"
    article = Reference(1, "规定", "总则如下。\n第三条 电池柜的环境温度应保持在\n25度以下。")
    answer = compose("电池柜的环境温度", [article], "zh")
    assert answer == "第三条 电池柜的环境温度应保持在 25度以下。 [1]"
    wrapped_zh = Reference(1, "手册", "完成了。\n电池柜的环境温度应保持在\n25度以下。")
    assert (
        compose("电池柜的环境温度", [wrapped_zh], "zh") == "电池柜的环境温度应保持在 25度以下。 [1]"
    )


def test_headings_in_their_own_block_at_a_blocks_end_or_numbered_with_a_point() -> None:
    markdown = Reference(
        1, "Manual", "## Warranty\n\nIt lasts five years.\n\n## Shipping\n\nIt ships in two days."
    )
    assert compose("warranty", [markdown], "en") == "It lasts five years. [1]"
    numbered = Reference(1, "Report", "Intro text.\n1. Introduction\nThe plant opened in 1986.")
    assert compose("plant opened", [numbered], "en") == "The plant opened in 1986. [1]"
    last = Reference(1, "Manual", "Filters are cleaned weekly.\n3.3 Filters")
    assert compose("filters", [last], "en") == "Filters are cleaned weekly. [1]"
    only = compose("zebra", [Reference(1, "Manual", "# Warranty")], "en")
    assert only.endswith("The closest passage says: Warranty [1]")


def test_brackets_are_written_one_citation_each_outside_code() -> None:
    """An answer's JSON array ("weights": [1, 2, 3]) was stored as "[1][2][3]", three links."""
    answer = 'Set `"weights": [1, 2, 3]` as [1-2] says.\n```\nw = [1, 2]\n```\nSee [1,3].'
    assert one_per_bracket(answer) == (
        'Set `"weights": [1, 2, 3]` as [1][2] says.\n```\nw = [1, 2]\n```\nSee [1][3].'
    )
