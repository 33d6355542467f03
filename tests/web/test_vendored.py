"""The UI's files ship in the package, match their recorded checksums, and name no other host."""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files

WEB = files("eagle_rag.web")


def test_every_vendored_file_matches_its_recorded_checksum() -> None:
    vendor = WEB / "static" / "vendor"
    table = (vendor / "VENDORED.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", table, flags=re.MULTILINE)
    assert rows, "VENDORED.md lists no files"
    for name, digest in rows:
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
    scripts = re.findall(
        r'src="/ui/static/vendor/([^"]+)"', (WEB / "templates" / "base.html").read_text()
    )
    assert scripts and set(scripts) <= {name for name, _ in rows}


def test_templates_and_scripts_load_nothing_from_another_host() -> None:
    sources = [p for p in (WEB / "templates").iterdir() if p.name.endswith(".html")]
    sources += list((WEB / "templates" / "fragments").iterdir())
    sources += [WEB / "static" / "app.js", WEB / "static" / "app.css"]
    external = re.compile(
        r"""(src|href|action)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|fetch\(\s*["']https?:"""
    )
    for source in sources:
        assert not external.search(source.read_text()), source.name
