"""dbt's Jinja, read with Jinja2's own parser: which ref()/source() a template calls, and the
SQL it renders to when macros are stubbed (so sqlglot can read the columns).

Regexes would miss calls split over lines, inside ``{% if %}`` or with keyword arguments; the
Jinja AST sees them all. Templates the sandbox cannot render keep their lineage: the calls come
from the AST, the SQL is then simply unavailable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.runtime import ChainableUndefined
from jinja2.sandbox import SandboxedEnvironment


@dataclass(frozen=True, slots=True)
class TemplateCalls:
    refs: tuple[str, ...]
    sources: tuple[str, ...]  # "source_name.table_name"
    config: dict[str, Any]
    syntax_error: str = ""

    @property
    def relations(self) -> tuple[str, ...]:
        return (*self.refs, *self.sources)


class _AnyMacro(ChainableUndefined):
    """An unknown macro or package (``dbt.date_trunc(...)``, ``dbt_utils.star(...)``): calling
    it renders ``null``, a value SQL accepts wherever an expression goes, so the SQL around
    it still renders and parses."""

    def __call__(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        return "null"


# What one render may spend. A file is a few KB, but its loops multiply: two nested
# ``range(100000)`` (each within the sandbox's own cap) ran 10^10 steps, at 100% CPU, on the
# worker's event loop, and again after every restart. Ordinary models take a few thousand.
MAX_RENDER_STEPS = 500_000  # Python line events of the compiled template
MAX_PRODUCT = 1_000_000  # items of a string or list built with * (one step, any size)


class RenderBudgetError(TemplateError):
    """The template would take more steps or memory than one model's SQL may."""


class _BoundedSandbox(SandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**"])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > 64:
            raise RenderBudgetError(f"an exponent of {right} is refused")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                repeats = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if repeats and len(seq) * times > MAX_PRODUCT:
                    raise RenderBudgetError("a repeated string or list is too long")
        return super().call_binop(context, operator, left, right)


def _environment() -> SandboxedEnvironment:
    env = _BoundedSandbox(undefined=_AnyMacro, extensions=["jinja2.ext.do"])
    # dbt's docs/snapshot/test/materialization blocks are not Jinja2 tags; the parse below
    # reports them as syntax errors, which keeps the calls found before them.
    return env


def _within_budget(render: Callable[[], str]) -> str:
    """Run ``render`` under a step budget: a tracer counts the Python lines it runs (in this
    thread only) and stops it past ``MAX_RENDER_STEPS``."""
    steps = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal steps
        steps += 1
        if steps > MAX_RENDER_STEPS:
            raise RenderBudgetError(f"the template ran over {MAX_RENDER_STEPS} steps")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return render()
    finally:
        sys.settrace(previous)


def template_calls(text: str) -> TemplateCalls:
    """ref()/source()/config() calls with constant arguments, from the template's AST."""
    env = _environment()
    try:
        tree = env.parse(text)
    except TemplateError as exc:
        return _calls_from_tokens(env, text, str(exc))
    refs: list[str] = []
    sources: list[str] = []
    config: dict[str, Any] = {}
    for call in tree.find_all(nodes.Call):
        name = call.node.name if isinstance(call.node, nodes.Name) else ""
        args = [a.value for a in call.args if isinstance(a, nodes.Const)]
        if name == "ref" and args:
            refs.append(str(args[-1]))  # ref('package', 'model') names the model last
        elif name == "source" and len(args) >= 2:
            sources.append(f"{args[0]}.{args[1]}")
        elif name == "config":
            for kw in call.kwargs:
                if isinstance(kw.value, nodes.Const):
                    config[kw.key] = kw.value.value
                elif isinstance(kw.value, nodes.List):
                    config[kw.key] = [i.value for i in kw.value.items if isinstance(i, nodes.Const)]
    return TemplateCalls(tuple(dict.fromkeys(refs)), tuple(dict.fromkeys(sources)), config)


def render_sql(text: str) -> str | None:
    """The SQL with ref()/source() replaced by their relation names and other macros blank;
    None when the template does not render (unknown tags, runtime errors)."""
    env = _environment()

    def ref(*args: Any, **_: Any) -> str:
        return str(args[-1]) if args else "ref"

    def source(*args: Any, **_: Any) -> str:
        return ".".join(str(a) for a in args[:2]) or "source"

    def blank(*_: Any, **__: Any) -> str:
        return ""

    context = {
        "ref": ref,
        "source": source,
        "config": blank,
        "var": lambda name, default="": default if default != "" else name,
        "is_incremental": lambda: False,
        "env_var": lambda name, default="": default or name,
        "this": "this",
    }
    try:
        template = env.from_string(text)
        return _within_budget(lambda: template.render(**context))
    except (TemplateError, TypeError, ValueError, AttributeError, RecursionError):
        return None  # RenderBudgetError included: the lineage stays, the SQL is unknown


def _calls_from_tokens(env: SandboxedEnvironment, text: str, error: str) -> TemplateCalls:
    """The template does not parse (a dbt-only tag such as ``{% materialization %}``, or a
    mistake): read ref()/source() calls from Jinja's token stream, which needs no grammar."""
    try:
        tokens = [(kind, value) for _, kind, value in env.lex(text)]
    except TemplateError:
        return TemplateCalls((), (), {}, syntax_error=error)
    refs: list[str] = []
    sources: list[str] = []
    for i, (kind, value) in enumerate(tokens):
        if kind != "name" or value not in ("ref", "source") or i + 1 >= len(tokens):
            continue
        if tokens[i + 1][0] != "operator" or tokens[i + 1][1] != "(":
            continue
        args: list[str] = []
        for arg_kind, arg in tokens[i + 2 :]:
            if arg_kind == "string":
                args.append(arg.strip("'\""))
            elif arg == ")" or arg_kind not in ("whitespace", "operator"):
                break
        if value == "ref" and args:
            refs.append(args[-1])
        elif value == "source" and len(args) >= 2:
            sources.append(f"{args[0]}.{args[1]}")
    return TemplateCalls(
        tuple(dict.fromkeys(refs)), tuple(dict.fromkeys(sources)), {}, syntax_error=error
    )
