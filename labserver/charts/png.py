"""A live frame's PNG bytes, compressed anew only where the canvas changed since the last frame.

Compressing the whole canvas is most of what a frame costs, yet from one second to the next
only a few rows change (the progress bar, the tops of the bars of the run in progress). So the
image's rows are compressed in bands, each as raw deflate blocks that end on a byte boundary and
refer to nothing before them: their concatenation is one valid deflate stream, and a band whose
rows did not change is copied from the last frame. Written here rather than by PIL, which also
filters every row before compressing it: a chart's flat colours compress as well unfiltered.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
BAND_ROWS = 8  # rows per band: the bars' tops move a few rows a frame
LEVEL = 1  # compressed lightly: a frame lives a second
ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, level "fastest" (a multiple of 31, as zlib checks)
LAST_BLOCK = b"\x03\x00"  # an empty final block (fixed Huffman): the stream's end
ADLER_BASE = 65521


class Encoder:
    """PNG bytes of RGBA pixels; an Encoder keeps the last frame's bands to reuse the unchanged ones."""

    def __init__(self):
        self.rows = np.empty((0, 0), dtype=np.uint8)
        self.bands: list[tuple[bytes, bytes, int]] = []  # (the band's rows, deflated, their Adler-32)

    def png(self, rgba: np.ndarray) -> bytes:
        """`rgba` (height × width × 4 bytes) as PNG: 8 bits a channel, RGBA, not interlaced, no filter."""
        height, width = rgba.shape[:2]
        if self.rows.shape != (height, 1 + 4 * width):
            self.rows = np.zeros((height, 1 + 4 * width), dtype=np.uint8)  # each row starts with its filter: 0
            self.bands = []
        self.rows[:, 1:] = rgba.reshape(height, -1)  # alpha kept: dropping it costs more than compressing it
        raw = self.rows.tobytes()
        step = BAND_ROWS * self.rows.shape[1]
        bands = [self._band(k, raw[start : start + step]) for k, start in enumerate(range(0, len(raw), step))]
        self.bands = bands
        adler = 1
        for band, _, band_adler in bands:
            adler = adler32_combine(adler, band_adler, len(band))
        data = ZLIB_HEADER + b"".join(deflated for _, deflated, _ in bands) + LAST_BLOCK + struct.pack(">I", adler)
        header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
        return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")

    def _band(self, k: int, rows: bytes) -> tuple[bytes, bytes, int]:
        if k < len(self.bands) and self.bands[k][0] == rows:
            return self.bands[k]
        deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)  # raw deflate: no header, no checksum
        return rows, deflate.compress(rows) + deflate.flush(zlib.Z_SYNC_FLUSH), zlib.adler32(rows)


def adler32_combine(first: int, second: int, second_len: int) -> int:
    """The Adler-32 of two byte strings joined, from theirs (zlib's adler32_combine, which Python's zlib lacks)."""
    rem = second_len % ADLER_BASE
    low = ((first & 0xFFFF) + (second & 0xFFFF) + ADLER_BASE - 1) % ADLER_BASE
    high = (rem * (first & 0xFFFF) + (first >> 16) + (second >> 16) + ADLER_BASE - rem) % ADLER_BASE
    return low | (high << 16)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
