"""A live frame's PNG (labserver/charts/png.py): the canvas's pixels, its unchanged bands reused from the last frame."""

import io
import os
import random
import zlib

import numpy as np
import PIL.Image

from labserver.charts import png


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(PIL.Image.open(io.BytesIO(data)))


def test_a_frame_decodes_to_its_pixels_and_reuses_the_bands_that_did_not_change(monkeypatch):
    rng = np.random.default_rng(3)
    image = np.full((61, 50, 4), 255, dtype=np.uint8)  # 61 rows: the last band is short
    image[10:40, 5:20] = rng.integers(0, 255, (30, 15, 4), dtype=np.uint8)
    encoder = png.Encoder()
    first = encoder.png(image)
    assert first.startswith(png.SIGNATURE) and np.array_equal(pixels(first), image)
    compressed = []
    compressobj = zlib.compressobj
    monkeypatch.setattr(zlib, "compressobj", lambda *a: compressed.append(a) or compressobj(*a))
    image[20, 7] = (1, 2, 3, 4)  # one pixel of the third band
    second = encoder.png(image)
    assert len(compressed) == 1 and np.array_equal(pixels(second), image)
    assert second == png.Encoder().png(image)  # the bytes a fresh encoder writes
    assert encoder.png(image[:30]) == png.Encoder().png(image[:30])  # another size starts afresh


def test_adler32_of_two_strings_joined_comes_from_theirs():
    for _ in range(200):
        a, b = os.urandom(random.randint(0, 9000)), bytes([255]) * random.randint(0, 70000)
        assert png.adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)
