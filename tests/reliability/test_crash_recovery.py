"""``kill -9`` of a real ``eagle-rag serve`` while its tasks run, then a restart on the same data
dir: every document completes without a manual retry, each marker word finds exactly its own
document, no duplicate chunks, and the consistency check is clean (benchmarks/crash_recovery.py
runs the same with issue 14's 40 documents)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.crash_recovery import run

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_a_killed_server_finishes_every_task_after_a_restart(tmp_path: Path) -> None:
    result = run(6, paragraphs=100, kill_after_s=0.0, base=tmp_path)
    assert result.ok, result.failures
    assert result.at_kill.get("completed", 0) < 6  # the kill came while tasks ran
    assert result.statuses == {"completed": 6}
    assert result.markers_exact == 6 and result.duplicate_chunks == 0
    assert result.requeued >= 1  # the restart re-queued what the kill stranded
