"""Prompts: numbered references, attachments and image captions, in Chinese or English.

One numbering for everything the model sees: text references are ``[1]..[T]``, attachments
follow as ``[T+1]..``, images after them, and those numbers are the ``index`` of the sources the
client receives (text, attachments, image), so a citation resolves without guessing. Images
with a loaded picture also go to the model as OpenAI ``image_url`` parts (data URLs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Language = Literal["zh", "en"]
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def detect_language(text: str) -> Language:
    """``zh`` when the text has Chinese characters, else ``en``."""
    return "zh" if _CJK.search(text) else "en"


@dataclass(frozen=True, slots=True)
class Reference:
    """A text source as the model sees it: ``[index]`` with its location."""

    index: int
    path: str
    text: str
    filename: str = ""
    pages: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file the user attached to the question (its text, already parsed)."""

    name: str
    text: str
    parse_ms: float = 0.0  # how long parsing the file took (0 for plain text)


@dataclass(frozen=True, slots=True)
class ImageCaption:
    """An image source's anchors: where it is and what it shows (no OCR needed)."""

    index: int
    image_id: str
    page: int | None
    section: str
    summary: str
    data_url: str | None = None  # the picture, when it could be loaded (else caption only)


@dataclass(frozen=True, slots=True)
class Turn:
    role: Literal["user", "assistant"]
    content: str


_TEMPLATES: dict[Language, dict[str, str]] = {
    "zh": {
        "system": (
            "你是知识库问答助手。只根据提供的参考信息回答用户问题；"
            "引用参考信息时在句末标注编号，如 [1]、[2]，"
            "编号只能来自【参考文本】【用户附件】【参考图片】。"
            "参考信息不足以回答时，直接说明无法从资料中找到答案，不要编造。"
            "不要使用 Markdown 图片语法，不要编造链接。请用中文回答。"
        ),
        "references": "【参考文本】",
        "attachments": "【用户附件】",
        "images": "【参考图片】",
        "question": "【用户问题】",
        "path": "路径",
        "file": "文件",
        "pages": "页码",
        "section": "章节",
        "summary": "摘要",
        "none": "（无）",
    },
    "en": {
        "system": (
            "You answer questions from a knowledge base. Use only the reference information "
            "provided; cite reference text with its number at the end of the sentence, like [1] "
            "or [2], using only numbers given in REFERENCE TEXT, USER ATTACHMENTS or REFERENCE "
            "IMAGES. If the references do not contain "
            "the answer, say that the documents do not answer it; never invent facts, links or "
            "image syntax. Answer in English."
        ),
        "references": "REFERENCE TEXT",
        "attachments": "USER ATTACHMENTS",
        "images": "REFERENCE IMAGES",
        "question": "QUESTION",
        "path": "path",
        "file": "file",
        "pages": "pages",
        "section": "section",
        "summary": "summary",
        "none": "(none)",
    },
}


def build_messages(
    question: str,
    references: Sequence[Reference],
    *,
    language: Language,
    attachments: Sequence[Attachment] = (),
    images: Sequence[ImageCaption] = (),
    history: Sequence[Turn] = (),
) -> list[dict[str, Any]]:
    """OpenAI-style chat messages: system, the earlier turns, then the grounded question.

    Visual evidence reaches the model as captions (image id, page, section, summary), so a
    text-only model can use it too.
    """
    t = _TEMPLATES[language]
    parts = [t["references"]]
    for ref in references:
        location = f"{t['path']}: {ref.path}"
        if ref.filename:
            location += f" | {t['file']}: {ref.filename}"
        if ref.pages:
            location += f" | {t['pages']}: {', '.join(map(str, ref.pages))}"
        parts.append(f"[{ref.index}] {location}\n{ref.text}")
    if not references:
        parts.append(t["none"])
    if attachments:
        parts.append(t["attachments"])
        first = len(references) + 1  # attachments are numbered after the references
        parts += [
            f"[{i}] {t['file']}: {a.name}\n{a.text}" for i, a in enumerate(attachments, first)
        ]
    if images:
        parts.append(t["images"])
        for image in images:
            page = image.page if image.page is not None else "-"
            parts.append(
                f"[{image.index}] image_id={image.image_id}, {t['pages']}={page}, "
                f"{t['section']}={image.section}, {t['summary']}={image.summary}"
            )
    parts += [t["question"], question]
    messages: list[dict[str, Any]] = [{"role": "system", "content": t["system"]}]
    messages += [{"role": turn.role, "content": turn.content} for turn in history]
    text = "\n\n".join(parts)
    pictures = [image.data_url for image in images if image.data_url]
    content: str | list[dict[str, Any]] = text
    if pictures:  # OpenAI content parts: the prompt, then each picture in caption order
        content = [{"type": "text", "text": text}]
        content += [{"type": "image_url", "image_url": {"url": url}} for url in pictures]
    messages.append({"role": "user", "content": content})
    return messages
