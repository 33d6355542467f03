"""The pool's errors when Milvus Lite will not open: held by another process, or broken."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from eagle_rag.errors import BackendUnavailableError
from eagle_rag.index.milvus_pool import MilvusClientPool
from tests.lite_holder import lite_data_dir_held


def _lite_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("milvus_lite")]


def test_a_data_dir_held_by_another_process_is_refused_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uri = str(tmp_path / "milvus.db")
    with lite_data_dir_held(uri), pytest.raises(BackendUnavailableError) as refused:
        MilvusClientPool(uri).client("default")

    assert refused.value.fields == {"backend": "milvus", "uri": uri, "in_use": True}
    assert "in use by another process (a running `eagle-rag serve`?)" in refused.value.message
    # The cause milvus_lite only logs is kept on the error, and its traceback is not logged.
    assert type(refused.value.__cause__).__name__ == "DataDirLockedError"
    assert _lite_records(caplog) == []


def test_a_data_dir_that_cannot_be_opened_is_refused_with_its_cause_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An OSError (a file where the dir should be, a read-only or foreign-owned dir) said only
    "Open local milvus failed", with milvus_lite's traceback logged beside it (doctor printed
    two on a read-only data dir)."""
    not_a_dir = tmp_path / "milvus.db"
    not_a_dir.write_text("a file where the data dir should be")

    with pytest.raises(BackendUnavailableError) as refused:
        MilvusClientPool(str(not_a_dir)).client("default")

    assert "in_use" not in refused.value.fields
    assert refused.value.message.startswith(
        "Milvus is unavailable: cannot open the Milvus Lite data dir: FileExistsError"
    )
    assert _lite_records(caplog) == []


def test_any_other_lite_failure_is_still_logged_and_not_called_in_use(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import milvus_lite.adapter.grpc.server as lite_server

    def broken(*_: object) -> None:
        raise RuntimeError("a bug inside Milvus Lite")

    monkeypatch.setattr(lite_server, "MilvusLite", broken)
    with pytest.raises(BackendUnavailableError) as refused:
        MilvusClientPool(str(tmp_path / "milvus.db")).client("default")

    assert "in_use" not in refused.value.fields
    assert refused.value.message.startswith("Milvus is unavailable")
    assert [r.exc_info is not None for r in _lite_records(caplog)] == [True]
