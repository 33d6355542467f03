"""The ``eagle-rag`` command line: each module registers its commands on the shared app."""

from eagle_rag.cli import db, doctor, knowledge, migrate, retrieval, server, tasks
from eagle_rag.cli.common import app

__all__ = ["app", "db", "doctor", "knowledge", "migrate", "retrieval", "server", "tasks"]
