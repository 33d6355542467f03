"""A spreadsheet cell's value as its number format shows it, where that is certain."""

from __future__ import annotations

import datetime as dt

import pytest

from eagle_rag.ingest.parsers.cell_display import displayed


@pytest.mark.parametrize(
    ("value", "number_format", "shown"),
    [
        (0.05, "0%", "5%"),
        (0.0525, "0.00%", "5.25%"),
        (1234.5, "$#,##0.00", "$1,234.50"),
        (-1234.5, "$#,##0.00", "-$1,234.50"),
        (-1234.5, '"$"#,##0.00_);("$"#,##0.00)', "($1,234.50)"),
        (1234.5, "#,##0.00 [$€-407]", "1,234.50 €"),
        (1234.5, "[Red]#,##0", "1,235"),
        (0.125, "0.00", "0.13"),  # half away from zero, as spreadsheets round
        (2.5, "0.##", "2.5"),
        (-0.001, "0.00", "0.00"),
        (12, "General", 12),
        (1.5, "0.0E+00", 1.5),
        (0.5, "# ?/?", 0.5),
        (150, "[>100]0", 150),
        (True, "0%", True),
        ("00123", "@", "00123"),
        (dt.datetime(2024, 3, 31), "yyyy-mm-dd h:mm", "2024-03-31 00:00"),
        (dt.datetime(2024, 3, 31, 9, 5), "m/d/yy", "2024-03-31"),
        (dt.datetime(2024, 3, 31, 9, 5, 7), "yyyy-mm-dd hh:mm:ss", "2024-03-31 09:05:07"),
        (dt.time(9, 30), "h:mm", "09:30"),
        (1e26, "#,##0.00", 1e26),  # more digits than decimal holds: as stored (it failed the file)
        (1e300, "0%", 1e300),
    ],
)
def test_a_value_is_shown_as_its_format_says(
    value: object, number_format: str, shown: object
) -> None:
    assert displayed(value, number_format) == shown
