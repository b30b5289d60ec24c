"""What the screenshot scripts (``docs/make_screenshots_*.py``) share.

Importing it makes Qt draw offscreen when there is no display and puts the repository on ``sys.path``
(the scripts run as ``python docs/make_screenshots_X.py``); then: :func:`open_window` (the studio's
main window on a throw-away data dir), :func:`settle`, :class:`Shots` (a view's files and what was
written) and :func:`parser` (the ``--size`` and ``--out`` flags).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

#: The README's pictures are taken at this size (``screenshot-VIEW.png`` besides the sized names).
README_SIZE = (1280, 800)


def settle(app: QApplication, seconds: float) -> None:
    """Process events for ``seconds`` (animations, timers and worker threads' signals land)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def open_window(tmp: Path, size: tuple[int, int]) -> tuple[QApplication, Any]:
    """The application and its main window, shown at ``size``: data in ``tmp / "data"``, settings in
    ``tmp / "settings.ini"`` (a fresh profile, nothing of the person's own)."""
    from studio.app import create_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    window = create_window(tmp / "data", settings=settings)
    window.resize(*size)
    window.show()
    return app, window


class Shots:
    """Grabs the window as ``out_dir/screenshot-VIEW-WxH.png``, and at :data:`README_SIZE` also as
    ``screenshot-VIEW.png`` for the views in ``readme`` (every view when None); ``written`` lists the
    file names in order."""

    def __init__(
        self,
        app: QApplication,
        window: Any,
        size: tuple[int, int],
        out_dir: Path,
        readme: Collection[str] | None = None,
    ) -> None:
        self.app, self.window, self.size, self.out_dir, self.readme = app, window, size, out_dir, readme
        self.written: list[str] = []

    def __call__(self, view: str) -> None:
        settle(self.app, 0.6)
        names = [f"screenshot-{view}-{self.size[0]}x{self.size[1]}.png"]
        if self.size == README_SIZE and (self.readme is None or view in self.readme):
            names.append(f"screenshot-{view}.png")
        for name in names:
            self.window.grab().save(str(self.out_dir / name))
            self.written.append(name)

    def close(self, more: str = "") -> None:
        """Close the window and say what was written (``more``: e.g. how long it took)."""
        self.window.close()
        print("wrote " + ", ".join(self.written) + f" to {self.out_dir}{more}")


def parse_size(text: str) -> tuple[int, int]:
    """``"1280x800"`` -> ``(1280, 800)``."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is WxH, e.g. 1280x800, not {text!r}") from None
    return w, h


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The flags every screenshot script takes (``--size``, ``--out``); its description is the first
    line of ``doc`` (the script's docstring)."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    p.add_argument("--size", type=parse_size, default="1280x800", help="window size WxH (default 1280x800)")
    p.add_argument("--out", type=Path, default=ROOT / "docs", help="where the files go (default docs/)")
    return p
