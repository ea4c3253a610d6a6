"""experiments.page_bytes: a private file mapping's bytes, read without faulting in the pages not yet touched, equal
the bytes in memory, a page changed in memory (copy-on-write) included."""
import sys

import numpy as np
import pytest

from experiments import corpus as ec
from experiments import page_bytes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/pagemap")


def test_untouched_pages_are_read_from_the_file_and_stay_out_of_memory(tmp_path):
    pages = 4096                                             # 16 MiB of 4 KiB pages: eight 2 MiB folios
    path = tmp_path / "weights.bin"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, pages * page_bytes.PAGE, dtype=np.uint8).tobytes())
    m = np.memmap(path, dtype=np.uint8, mode="c")            # a private (copy-on-write) mapping, as torch's weights
    m[3 * page_bytes.PAGE + 5] ^= 0xFF                       # changed in memory only: the file still holds the old
    int(m[10 * page_bytes.PAGE])                             # read once: present
    ptr, view = m.ctypes.data + 100, memoryview(m)[100:-7]   # a buffer that starts and ends inside a page
    before = page_bytes._untouched(ptr, view.nbytes)
    huge = (2 << 20) // page_bytes.PAGE                      # a kernel with large page-cache folios may map a whole
    assert before.sum() >= pages - 2 * huge                  # folio (up to 2 MiB) around each of the two faults
    got = b"".join(bytes(piece) for piece in page_bytes.chunks(ptr, view.nbytes, view))
    np.testing.assert_array_equal(page_bytes._untouched(ptr, view.nbytes), before)   # nothing more mapped in
    want = bytearray(path.read_bytes())
    want[3 * page_bytes.PAGE + 5] ^= 0xFF
    assert got == bytes(want[100:-7]) == bytes(view)         # the byte changed in memory too


def test_anonymous_memory_is_read_as_it_is():
    a = np.arange(10_000, dtype=np.int32)
    view = memoryview(a).cast("B")
    assert b"".join(bytes(p) for p in page_bytes.chunks(a.ctypes.data, view.nbytes, view)) == a.tobytes()


def test_a_loaded_models_identity_leaves_its_untouched_weight_pages_out_of_memory():
    import models

    model = models.load("bert", "cpu")
    model.attend("The cat sat.")
    table = model.model.embeddings.word_embeddings.weight                                      # (V, D)
    before = page_bytes._untouched(table.data_ptr(), table.nbytes).sum()
    assert before > 0.9 * table.nbytes / page_bytes.PAGE     # a sentence reads a few rows of the table
    ec.identity(model)
    assert page_bytes._untouched(table.data_ptr(), table.nbytes).sum() == before
