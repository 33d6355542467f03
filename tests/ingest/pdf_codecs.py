"""Image-only PDFs written byte by byte, one page per image, with the image stream encodings
real scanners and converters use: ASCII85 around JPEG, CCITT G4 fax, LZW, 8-bit grey and CMYK.

The encoders are the real ones (Pillow's JPEG, libtiff's G4 and LZW); only the few PDF objects
around them are written here, so every test knows exactly which filter its page carries.
"""

from __future__ import annotations

import base64
import io
import zlib
from dataclasses import dataclass

from PIL import Image, TiffImagePlugin


@dataclass(frozen=True, slots=True)
class ImageStream:
    """An image XObject's dictionary entries and its (encoded) bytes."""

    entries: str
    data: bytes


def ascii85_jpeg(page: Image.Image) -> ImageStream:
    jpeg = _saved(page.convert("RGB"), "JPEG", quality=90)
    data = base64.a85encode(jpeg, wrapcol=76) + b"~>"
    return ImageStream(
        "/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter [/ASCII85Decode /DCTDecode]", data
    )


def ccitt_g4(page: Image.Image) -> ImageStream:
    bilevel = page.convert("L").point(lambda v: 255 if v > 160 else 0).convert("1")
    width, height = bilevel.size
    data = _tiff_strip(bilevel, "group4")
    # Pillow's bilevel TIFF is min-is-black: its fax runs read right with BlackIs1.
    parms = f"<< /K -1 /Columns {width} /Rows {height} /BlackIs1 true >>"
    return ImageStream(
        f"/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode /DecodeParms {parms}",
        data,
    )


def lzw(page: Image.Image) -> ImageStream:
    data = _tiff_strip(page.convert("RGB"), "tiff_lzw")
    return ImageStream("/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /LZWDecode", data)


def grayscale(page: Image.Image) -> ImageStream:
    data = zlib.compress(page.convert("L").tobytes())
    return ImageStream("/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", data)


def cmyk_jpeg(page: Image.Image) -> ImageStream:
    # Pillow writes Adobe-style (inverted) CMYK JPEGs: the Decode array turns them back.
    jpeg = _saved(page.convert("CMYK"), "JPEG", quality=90)
    return ImageStream(
        "/ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /DCTDecode /Decode [1 0 1 0 1 0 1 0]",
        jpeg,
    )


def image_pdf(page: Image.Image | tuple[int, int], stream: ImageStream, *, dpi: int = 150) -> bytes:
    """A one-page PDF showing ``stream`` (``page``'s pixels, or pixels of that size) over the
    whole page."""
    width, height = page if isinstance(page, tuple) else page.size
    points_w, points_h = width * 72 / dpi, height * 72 / dpi
    content = f"q {points_w:.2f} 0 0 {points_h:.2f} 0 0 cm /Im0 Do Q".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {points_w:.2f} {points_h:.2f}] "
        f"/Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>".encode(),
        _stream(b"", content),
        _stream(
            f"/Type /XObject /Subtype /Image /Width {width} /Height {height} "
            f"{stream.entries}".encode(),
            stream.data,
        ),
    ]
    return _document(objects)


def _stream(entries: bytes, data: bytes) -> bytes:
    head = b"<< " + entries + b" /Length " + str(len(data)).encode() + b" >>\nstream\n"
    return head + data + b"\nendstream"


def _document(objects: list[bytes]) -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    out.write(trailer.encode())
    return out.getvalue()


def _saved(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def _tiff_strip(image: Image.Image, compression: str) -> bytes:
    """The encoded pixels of a one-strip TIFF (libtiff's encoder), as a PDF filter takes them."""
    info = TiffImagePlugin.ImageFileDirectory_v2()
    info[278] = image.size[1]  # RowsPerStrip: the whole image in one strip
    raw = _saved(image, "TIFF", compression=compression, tiffinfo=info)
    tiff = Image.open(io.BytesIO(raw))
    offsets, counts = tiff.tag_v2[273], tiff.tag_v2[279]
    offsets = offsets if isinstance(offsets, tuple) else (offsets,)
    counts = counts if isinstance(counts, tuple) else (counts,)
    if len(offsets) != 1:
        raise ValueError(f"libtiff wrote {len(offsets)} strips; one was asked for")
    return raw[offsets[0] : offsets[0] + counts[0]]
