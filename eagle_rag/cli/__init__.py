"""The ``eagle-rag`` command line: each module registers its commands on the shared app."""

from eagle_rag.cli import doctor, knowledge, migrate, retrieval, server
from eagle_rag.cli.common import app

__all__ = ["app", "doctor", "knowledge", "migrate", "retrieval", "server"]
