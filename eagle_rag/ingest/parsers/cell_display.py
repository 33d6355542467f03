"""A spreadsheet cell's value as the user sees it, where its number format says so reliably.

A stored 0.05 shown as "5%" is found by "5%", not by "0.05"; "$1,234.50" is what a reader quotes.
Formats read: a number pattern (``0``, ``#,##0.00``) with literal text around it (a currency
sign, quoted text, ``[$€-407]``) and percent; two sections for negatives. Dates are ISO
(``2024-03-31``), with the time only where the format shows one. Anything else (scientific,
fractions, conditions, text, ``General``) keeps the stored value: a guess would be worse than it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

_TOKEN = re.compile(
    r'"(?P<quoted>[^"]*)"|\\(?P<escaped>.)|[_*](?P<padding>.)|\[\$(?P<currency>[^\]-]*)[^\]]*\]'
    r"|\[(?P<bracket>[^\]]*)\]|(?P<number>[#0?,.]+)|(?P<percent>%)"
    r"|(?P<literal>[ $+\-():^'{}<>=!€£¥₹₩])|(?P<other>.)",
    re.DOTALL,
)
_COLOURS = re.compile(r"^(?:black|blue|cyan|green|magenta|red|white|yellow|color\s*\d+)$", re.I)
_SHOWS_TIME = re.compile(r"[hs]", re.IGNORECASE)


def displayed(value: object, number_format: str | None) -> object:
    """The value as its format shows it, or the value itself where that is not certain."""
    fmt = number_format or "General"
    if isinstance(value, dt.datetime):
        shows_time = bool(_SHOWS_TIME.search(_unquoted(fmt)))
        return (
            value.isoformat(" ", "seconds" if "s" in fmt.lower() else "minutes")
            if (shows_time)
            else value.date().isoformat()
        )
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat("seconds" if value.second else "minutes")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return value
    try:
        shown = _shown_number(value, _sections(fmt))
    except InvalidOperation:  # more digits than decimal's 28 (1e26 as "#,##0.00"): as stored
        return value
    return value if shown is None else shown


def _shown_number(value: float, sections: list[str]) -> str | None:
    if value < 0 and len(sections) > 1:  # the negative section writes its own sign
        return _with_pattern(-value, sections[1])
    shown = _with_pattern(abs(value), sections[0])
    if shown is not None and value < 0 and re.search("[1-9]", shown):  # not "-0.00"
        shown = "-" + shown
    return shown


def _with_pattern(value: float, section: str) -> str | None:
    """A non-negative value in one section's pattern, None where the section is not one."""
    prefix: list[str] = []
    suffix: list[str] = []
    pattern = ""
    percent = 0
    for token in _TOKEN.finditer(section):
        kind, text = token.lastgroup, token.group(token.lastgroup or 0)
        if kind == "other" or (kind == "bracket" and not _COLOURS.match(text)):
            return None  # a date part, exponent, fraction, text or condition: not ours
        if kind == "number":
            if pattern:
                return None
            pattern = text
        percent += kind == "percent"
        if kind in ("quoted", "escaped", "currency", "literal", "percent"):
            (suffix if pattern else prefix).append(text)
    if not re.search(r"[0#?]", pattern) or pattern.endswith(","):  # a trailing comma scales
        return None
    return "".join(prefix) + _number(value * 100**percent, pattern) + "".join(suffix)


def _number(value: float, pattern: str) -> str:
    whole, _, fraction = pattern.partition(".")
    places = sum(ch in "0#?" for ch in fraction)
    # Half away from zero, as spreadsheets round (0.125 shows 0.13), on the shortest decimal.
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{rounded:,.{places}f}" if "," in whole else f"{rounded:.{places}f}"
    if places and fraction and set(fraction) <= {"#"}:  # optional digits: "0.##" shows 2.5
        text = text.rstrip("0").rstrip(".")
    return text


def _sections(fmt: str) -> list[str]:
    """The format's sections (positive; negative; zero; text), split outside quotes."""
    return re.findall(r'(?:"[^"]*"|\\.|[^;])+', fmt) or [fmt]


def _unquoted(fmt: str) -> str:
    return re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", fmt)
