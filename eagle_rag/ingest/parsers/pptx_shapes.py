"""The text of a slide's shapes in reading order: text frames, tables, charts, groups.

A slide stores its shapes in z-order (the order they were drawn), which is not the order a
reader follows: a text box added last but placed at the top was read last. Shapes are read top
to bottom, then left to right, by their position; a group's shapes in the same order, where the
group stands. A chart's title, series and categories are text too (a question about "the sales
chart" should find it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from eagle_rag.ingest.parsers.base import markdown_table
from eagle_rag.plugins.payloads import TextSection


def reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Shapes top to bottom, then left to right (one without a position counts as at the top
    left; shapes at the same place keep their drawing order)."""
    return sorted(shapes, key=lambda shape: (shape.top or 0, shape.left or 0))


def shape_sections(shape: Any, page: int) -> Iterator[TextSection]:
    """The sections of one shape on slide ``page``; a group's shapes in reading order."""
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        if rows:
            yield TextSection(markdown_table(rows), page=page, kind="table")
    elif getattr(shape, "has_chart", False) and shape.has_chart:
        lines = chart_lines(shape.chart)
        if lines:
            yield TextSection("\n".join(lines), page=page)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        # A bullet's level (the Tab key in PowerPoint) is its indent: sub-points under theirs.
        paragraphs = [p for p in shape.text_frame.paragraphs if p.text.strip()]
        lines = ["  " * (p.level or 0) + p.text.strip() for p in paragraphs]
        if lines:
            yield TextSection("\n".join(lines), page=page)
    elif shape.shape_type is not None and hasattr(shape, "shapes"):  # a group
        for inner in reading_order(shape.shapes):
            yield from shape_sections(inner, page)


def chart_lines(chart: Any) -> list[str]:
    """``Chart: title``, ``Series: …`` and ``Categories: …``, each where the chart has it."""
    lines: list[str] = []
    if chart.has_title and chart.chart_title.has_text_frame:
        title = " ".join(chart.chart_title.text_frame.text.split())
        if title:
            lines.append(f"Chart: {title}")
    try:
        plots = list(chart.plots)
    except NotImplementedError:  # a chart type python-pptx cannot read (its title is kept)
        return lines
    series = _unique(s.name for plot in plots for s in plot.series)
    categories = _unique(str(c) for plot in plots for c in plot.categories)
    if series:
        lines.append("Series: " + ", ".join(series))
    if categories:
        lines.append("Categories: " + ", ".join(categories))
    return lines


def _unique(texts: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in texts if t and t.strip()))
