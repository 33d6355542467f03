"""The examples of docs/integrations.md and docs/mcp.md run as written against a real server
(only the address and key are swapped for the test server's)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from eagle_rag.client import EagleClient
from tests.adapters.conftest import KEY
from tests.api.server import RunningServer
from tests.retrieval.conftest import SOLAR

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def examples(name: str) -> list[str]:
    return BLOCK.findall((DOCS / name).read_text())


@pytest.fixture(scope="module")
def handbook(server: RunningServer) -> str:
    with EagleClient(server.url, api_key=KEY) as client:
        client.create_knowledge_base("handbook")
        job = client.ingest("handbook", SOLAR.encode(), filename="solar.md")
        assert client.wait_for_task(job.job_id).status == "completed"
    return "handbook"


@pytest.mark.parametrize(
    ("document", "index", "expected"),
    [
        ("integrations.md", 0, "copper cables"),  # Python client
        ("integrations.md", 1, "[1]"),  # OpenAI-compatible, streamed
        ("integrations.md", 2, "copper cables"),  # Dify
        ("integrations.md", 3, "[1] solar.md"),  # LlamaIndex
        ("integrations.md", 4, "[1] solar.md"),  # LangChain
        ("mcp.md", 0, "Solar Guide/Installation/Wiring"),  # official MCP SDK
    ],
)
def test_example_runs(
    server: RunningServer, handbook: str, document: str, index: int, expected: str
) -> None:
    code = examples(document)[index]
    code = code.replace("http://127.0.0.1:8000", server.url).replace("s3cret", KEY)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{document}[{index}]", "exec"), {"__name__": "example"})
    assert expected in printed.getvalue()


def test_every_python_example_is_run() -> None:
    assert len(examples("integrations.md")) == 5 and len(examples("mcp.md")) == 1
