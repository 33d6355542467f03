"""The built-in web UI (Core only): knowledge bases, documents with live ingest progress, and Ask.

Server-rendered Jinja pages and fragments driven by htmx, plus one small script for the parts that
stream (uploads, answers) or draw (hovercards, page previews). Everything ships in the package:
templates and vendored static files, no CDN and no build step.
"""

from eagle_rag.web.routes import mount_web

__all__ = ["mount_web"]
