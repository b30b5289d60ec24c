"""Guards the PySide6 pin in pyproject.toml.

PySide6 6.12.0 (abi3 wheels) on Python 3.11 hands back None from every setter without taking a
reference; after a few thousand calls CPython aborts with "none_dealloc". We pin < 6.12; this test
fails (instead of the whole suite crashing at random) if a broken binding is installed again.
"""

import sys

from PySide6.QtWidgets import QLabel


def test_qt_setters_keep_none_refcount(qapp):
    label = QLabel()
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.setText("2048")
    after = sys.getrefcount(None)
    # A healthy binding leaves None's count where it was (allow noise from other threads).
    assert abs(after - before) < 200, (before, after)
