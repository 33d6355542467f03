"""One PDFium call at a time in this process.

PDFium keeps global state and is not thread-safe (pypdfium2 documents it: never call it from two
threads at once), while Eagle-RAG reads PDFs on worker threads: the parser, visual extraction
and the page-image route, for concurrent ingests and requests. Two at once crashed the server
(a segfault in a page render). Every use of PDFium holds this lock; it is re-entrant, so a
helper may take it again. Slow work on what PDFium returned (OCR of a rendered page) happens
outside it.
"""

from __future__ import annotations

import threading

# Process-wide by nature, as PDFium's own state is: the one module-level object it needs.
PDFIUM = threading.RLock()
