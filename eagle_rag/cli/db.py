"""``eagle-rag db status`` and ``db upgrade``: the metadata schema's revision and its migrations.

``serve`` and every command that opens the stores migrate on start; these let an operator see
what is pending and apply it once, before rolling new API and worker processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from eagle_rag.cli.common import JsonOption, app, fail, settings_from_env
from eagle_rag.db.database import Database
from eagle_rag.errors import EagleError
from eagle_rag.settings import Settings, mask_url_password

db_app = typer.Typer(help="The metadata database's schema migrations.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _database(settings: Settings) -> Database:
    if settings.database.url.startswith("sqlite"):
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    return Database(settings.database.url)


@db_app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Print the schema revision and the migrations still to apply; exit 1 if any are."""
    settings = settings_from_env()
    database = _database(settings)
    try:
        database.health()
        current, pending = database.schema_state()
    except EagleError as exc:
        fail(exc)
    finally:
        database.dispose()
    target = mask_url_password(settings.database.url)
    if as_json:
        typer.echo(json.dumps({"database": target, "revision": current, "pending": pending}))
    elif pending:
        typer.echo(f"{target}: schema {current or 'empty'}, pending: {', '.join(pending)}")
    else:
        typer.echo(f"{target}: schema {current}, up to date")
    raise typer.Exit(code=1 if pending else 0)


@db_app.command("upgrade")
def upgrade(as_json: JsonOption = False) -> None:
    """Apply every pending migration (Alembic upgrade to head)."""
    settings = settings_from_env()
    database = _database(settings)
    try:
        database.health()
        pending = database.pending()
        revision = database.migrate()
    except EagleError as exc:
        fail(exc)
    finally:
        database.dispose()
    if as_json:
        typer.echo(json.dumps({"revision": revision, "applied": pending}))
    elif pending:
        typer.echo(f"applied {', '.join(pending)}: schema {revision}")
    else:
        typer.echo(f"schema {revision}: nothing to apply")
