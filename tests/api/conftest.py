"""One real server per module (an open API); security tests start their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.server import RunningServer, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(
        tmp_path_factory.mktemp("api"), ingest={"max_file_bytes": 200_000}
    ) as running:
        yield running
