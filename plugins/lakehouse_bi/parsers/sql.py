"""SQL files: dbt models (Jinja with ref()/source()) and DDL (CREATE TABLE / VIEW, COMMENT ON).

sqlglot reads the SQL. A dbt model is rendered with its macros stubbed first; when it does not
render or parse (heavy Jinja, an unsupported dialect), its lineage still comes from the Jinja
AST and the model is kept without its output columns, with a note saying why.
"""

from __future__ import annotations

import bisect
import re
from pathlib import PurePosixPath

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import TokenType

from eagle_rag.errors import InvalidInputError
from plugins.lakehouse_bi.jinja import render_sql, template_calls
from plugins.lakehouse_bi.model import (
    COLUMN,
    MODEL,
    TABLE,
    FileCatalog,
    SemanticObject,
    as_list,
    clean,
)

# Tried in order; the first that parses every statement wins.
DIALECTS: tuple[str | None, ...] = (None, "postgres", "mysql", "snowflake", "bigquery", "spark")
SQL_EXCERPT = 600


def is_templated(text: str) -> bool:
    return "{{" in text or "{%" in text


# dbt's non-model Jinja files: macros, generic tests, materializations (``macros/*.sql``,
# ``tests/generic/*.sql``), and comments.
_NON_MODEL_BLOCK = re.compile(
    r"\{%-?\s*(macro|test|materialization)\b.*?\{%-?\s*end\1\s*-?%\}|\{#.*?#\}", re.S
)


def is_macro_file(text: str) -> bool:
    """Only ``{% macro %}`` (or generic ``{% test %}``, ``{% materialization %}``) blocks: a
    library of Jinja, not a model (it would be indexed as a model named after the file)."""
    blocks = [m.group(1) for m in _NON_MODEL_BLOCK.finditer(text)]  # None for a comment
    return any(blocks) and not _NON_MODEL_BLOCK.sub("", text).strip()


# The words that start a column constraint, so end the column's type in its definition.
_CONSTRAINT_WORDS = frozenset(
    {
        *("NOT", "NULL", "PRIMARY", "UNIQUE", "DEFAULT", "COMMENT", "REFERENCES", "CHECK"),
        *("CONSTRAINT", "GENERATED", "COLLATE", "AUTO_INCREMENT", "AUTOINCREMENT", "IDENTITY"),
        *("ENCODE", "OPTIONS", "MASKING", "AS"),
    }
)


def read_sql(text: str, filename: str) -> FileCatalog:
    if is_templated(text):
        return read_dbt_model(text, filename)
    parsed = _parse_with_dialect(text)
    if parsed is not None and any(isinstance(s, exp.Create | exp.Comment) for s in parsed[1]):
        dialect, statements = parsed
        return read_ddl(statements, filename, TypeSpelling(text, dialect))
    return read_dbt_model(text, filename)


def _parse(sql: str) -> list[exp.Expression] | None:
    parsed = _parse_with_dialect(sql)
    return parsed[1] if parsed else None


def _parse_with_dialect(sql: str) -> tuple[str | None, list[exp.Expression]] | None:
    """The first dialect that reads every statement; a dialect that gave up on one (sqlglot
    keeps it as an opaque Command: BigQuery's backticked names in the generic dialect) only
    when no dialect reads them all (a GRANT is a Command in every dialect)."""
    fallback = None
    for dialect in DIALECTS:
        try:
            parsed = sqlglot.parse(sql, read=dialect)
        except (ParseError, TokenError, ValueError):
            continue
        statements = [s for s in parsed if isinstance(s, exp.Expression)]
        if statements and not any(isinstance(s, exp.Command) for s in statements):
            return dialect, statements
        if statements and fallback is None:
            fallback = dialect, statements
    return fallback


class TypeSpelling:
    """Column types as the file writes them (``NUMERIC(12,2)``, ``float8``): sqlglot's rendering
    normalises them (``DECIMAL(12, 2)``, ``DOUBLE``), which is not what the warehouse calls
    them, nor always valid in its dialect."""

    def __init__(self, sql: str, dialect: str | None) -> None:
        self._sql = sql
        self._tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
        self._starts = [token.start for token in self._tokens]

    def of(self, column: exp.ColumnDef) -> str | None:
        """The text between the column's name and its first constraint; None if unknown."""
        name_end = column.this.meta.get("end") if isinstance(column.this, exp.Identifier) else None
        if name_end is None:
            return None
        depth, first, last = 0, None, None
        for token in self._tokens[bisect.bisect_right(self._starts, name_end) :]:
            word = token.text.split()[0].upper() if token.text.strip() else ""
            closes = token.token_type in (TokenType.COMMA, TokenType.R_PAREN)
            if depth == 0 and (closes or word in _CONSTRAINT_WORDS):
                break
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
            first, last = first or token, token
        return self._sql[first.start : last.end + 1] if first and last else None


def read_dbt_model(text: str, filename: str) -> FileCatalog:
    if is_macro_file(text):
        raise InvalidInputError("the file holds dbt macros, not a model", filename=filename)
    name = PurePosixPath(filename).stem
    calls = template_calls(text)
    notes: list[str] = []
    if calls.syntax_error:
        notes.append(f"Jinja not parsed ({calls.syntax_error}); lineage may be incomplete")
    upstream = [r for r in calls.relations if r != name]
    if len(upstream) < len(calls.relations):
        notes.append(f"model {name} references itself; that reference is ignored")
    rendered = render_sql(text) if not calls.syntax_error else None
    columns: list[str] = []
    if rendered is not None:
        statements = _parse(rendered)
        if statements is None:
            notes.append("the rendered SQL did not parse; output columns unknown")
        else:
            columns = _output_columns(statements[-1])
    elif not calls.syntax_error:
        notes.append("the Jinja did not render; output columns unknown")
    config = calls.config
    details: list[tuple[str, str]] = []
    if config.get("materialized"):
        details.append(("Materialized", clean(config["materialized"])))
    if columns:
        details.append(("Output columns", ", ".join(columns)))
    # Said in the model's own chunk: what a reader of it must know it lacks, and why.
    details.extend(("Note", note) for note in notes)
    excerpt = " ".join(text.split())[:SQL_EXCERPT]
    details.append(("SQL", excerpt))
    model = SemanticObject(
        MODEL,
        name,
        (name,),
        "dbt",
        upstream=tuple(upstream),
        tags=tuple(clean(t) for t in as_list(config.get("tags"))),
        details=tuple(details),
    )
    if not upstream and not columns and calls.syntax_error:
        raise InvalidInputError(
            f"the SQL model could not be read: {calls.syntax_error}", filename=filename
        )
    return FileCatalog("dbt_sql", (model,), tuple(notes))


def _output_columns(statement: exp.Expression) -> list[str]:
    select = statement if isinstance(statement, exp.Select) else statement.find(exp.Select)
    if select is None:
        return []
    names = [e.alias_or_name for e in select.expressions if not isinstance(e, exp.Star)]
    return [n for n in dict.fromkeys(names) if n and n != "*"]


def read_ddl(
    statements: list[exp.Expression], filename: str, spelling: TypeSpelling | None = None
) -> FileCatalog:
    tables: dict[str, dict[str, object]] = {}
    order: list[str] = []
    for statement in statements:
        if isinstance(statement, exp.Create):
            _create(statement, tables, order, spelling)
        elif isinstance(statement, exp.Comment):
            _comment(statement, tables)
        elif isinstance(statement, exp.Alter):
            _alter(statement, tables)
    objects: list[SemanticObject] = []
    for name in order:
        table = tables[name]
        columns: list[dict[str, str]] = table["columns"]  # type: ignore[assignment]
        # A primary key is the table's grain, as LookML's primary_key is a view's.
        keys = [c["name"] for c in columns if "primary_key" in c["constraints"].split(",")]
        objects.append(
            SemanticObject(
                TABLE,
                name,
                (name,),
                "ddl",
                description=str(table["comment"]),
                upstream=tuple(table["upstream"]),  # type: ignore[arg-type]
                grain=f"one row per {', '.join(keys)}" if keys else "",
                details=(("Kind", str(table["kind"])),),
            )
        )
        for column in columns:
            objects.append(
                SemanticObject(
                    COLUMN,
                    column["name"],
                    (name, column["name"]),
                    "ddl",
                    description=column["comment"],
                    model=name,
                    data_type=column["type"],
                    tests=tuple(column["constraints"].split(",")) if column["constraints"] else (),
                )
            )
    if not objects:
        raise InvalidInputError("the SQL file defines no table or view", filename=filename)
    return FileCatalog("ddl", tuple(objects))


def _constraint_name(kind: exp.ColumnConstraintKind | exp.Reference) -> str:
    """A column constraint named as dbt's tests are: ``relationships(raw.orders.order_id)`` for
    a foreign key (it read ``references_raw.orders_(order_id)``), ``primary_key``,
    ``not_null``."""
    if isinstance(kind, exp.Reference) and isinstance(kind.this, exp.Schema):
        target = kind.this.this
        columns = [c.name for c in kind.this.expressions]
        if isinstance(target, exp.Table) and len(columns) == 1:
            return f"relationships({_relation(target)}.{columns[0]})"
    return str(kind.sql().lower().replace(" ", "_"))


def _type(column: exp.ColumnDef, spelling: TypeSpelling | None) -> str:
    if column.kind is None:
        return ""
    return (spelling.of(column) if spelling else None) or column.kind.sql()


def _relation(table: exp.Table) -> str:
    """``catalog.schema.table`` as written: prod.public.accounts is not dev.public.accounts."""
    return ".".join(p for p in (table.catalog, table.db, table.name) if p)


def _create(
    statement: exp.Create,
    tables: dict[str, dict[str, object]],
    order: list[str],
    spelling: TypeSpelling | None,
) -> None:
    target = statement.this
    schema = target if isinstance(target, exp.Schema) else None
    table = target.this if schema is not None else target
    if not isinstance(table, exp.Table):
        return
    name = _relation(table)
    defined = schema.expressions if schema is not None else []
    columns = [_column(c, spelling) for c in defined if isinstance(c, exp.ColumnDef)]
    for node in defined:
        _add_tests(columns, _key_tests(node))
    upstream: list[str] = []
    query = statement.expression
    if isinstance(query, exp.Expression):
        upstream = [_relation(t) for t in query.find_all(exp.Table) if _relation(t) != name]
        if not columns:
            columns = [
                {"name": n, "type": "", "comment": "", "constraints": ""}
                for n in _output_columns(query)
            ]
    comment = ""
    properties = statement.args.get("properties")
    if properties is not None:
        for prop in properties.expressions:
            if isinstance(prop, exp.SchemaCommentProperty):
                comment = clean(prop.this.name)
    if name not in tables:
        order.append(name)
    tables[name] = {
        "kind": str(statement.args.get("kind") or "TABLE").upper(),
        "columns": columns,
        "comment": comment,
        "upstream": list(dict.fromkeys(upstream)),
    }


def _column(column: exp.ColumnDef, spelling: TypeSpelling | None) -> dict[str, str]:
    comment, constraints = "", []
    for constraint in column.constraints:
        kind = constraint.kind
        if isinstance(kind, exp.CommentColumnConstraint):
            comment = clean(kind.this.name if isinstance(kind.this, exp.Literal) else kind.this)
        elif isinstance(kind, exp.Properties):  # BigQuery's OPTIONS(description = "...")
            described = [p.args.get("value") for p in kind.expressions if p.name == "description"]
            comment = next((clean(d.name) for d in described if d is not None), comment)
        else:
            constraints.append(_constraint_name(kind))
    return {
        "name": column.name,
        "type": _type(column, spelling),
        "comment": comment,
        "constraints": ",".join(constraints),
    }


def _key_tests(node: exp.Expression) -> list[tuple[str, str]]:
    """(column, test) of a table-level key, named as a column's: ``PRIMARY KEY (a, b)`` gives
    a and b ``primary_key``; ``[CONSTRAINT fk] FOREIGN KEY (a) REFERENCES t (x)`` gives a
    ``relationships(t.x)``."""
    tests: list[tuple[str, str]] = []
    for part in node.expressions if isinstance(node, exp.Constraint) else [node]:
        if isinstance(part, exp.PrimaryKey):
            tests += [(c.name, "primary_key") for c in part.expressions if c.name]
        elif isinstance(part, exp.ForeignKey):
            reference = part.args.get("reference")
            target = reference.this if isinstance(reference, exp.Reference) else None
            if isinstance(target, exp.Schema) and isinstance(target.this, exp.Table):
                table = _relation(target.this)
                pairs = zip(part.expressions, target.expressions, strict=False)
                tests += [(c.name, f"relationships({table}.{r.name})") for c, r in pairs]
    return tests


def _add_tests(columns: list[dict[str, str]], tests: list[tuple[str, str]]) -> None:
    for name, test in tests:
        for column in columns:
            held = [c for c in column["constraints"].split(",") if c]
            if column["name"] == name and test not in held:
                column["constraints"] = ",".join([*held, test])


def _alter(statement: exp.Alter, tables: dict[str, dict[str, object]]) -> None:
    """``ALTER TABLE t ADD [CONSTRAINT c] PRIMARY KEY / FOREIGN KEY``: the keys of a table this
    file created (a later statement, as dumps from pg_dump write them)."""
    target = statement.this
    entry = tables.get(_relation(target)) if isinstance(target, exp.Table) else None
    if entry is None:
        return
    for action in statement.args.get("actions") or []:
        if isinstance(action, exp.AddConstraint):
            for node in action.expressions:
                _add_tests(entry["columns"], _key_tests(node))  # type: ignore[arg-type]


def _comment(statement: exp.Comment, tables: dict[str, dict[str, object]]) -> None:
    text = clean(statement.expression.name) if statement.expression is not None else ""
    target = statement.this
    kind = str(statement.args.get("kind", "")).upper()
    if kind == "TABLE" and isinstance(target, exp.Table):
        entry = tables.get(_relation(target))
        if entry is not None:
            entry["comment"] = text
    elif kind == "COLUMN" and isinstance(target, exp.Column):
        parts = (target.args.get("catalog") and target.catalog, target.args.get("db") and target.db)
        entry = tables.get(".".join(p for p in (*parts, target.table) if p))
        if entry is None:
            return
        for column in entry["columns"]:  # type: ignore[attr-defined]
            if column["name"] == target.name:
                column["comment"] = text
