"""Regenerate the sweep screenshots: ``python docs/make_screenshots_sweep.py``.

Builds the real main window on a throw-away data dir and uses it as a person would: picks the n-tuple
network in the Train tab, opens "Sweep…", sets the learning rate to a list of four values with two
seeds per point, grabs the dialog over the window (``screenshot-sweep-dialog.png``), starts the sweep,
waits for its eight trials and grabs the Sweeps panel with the ranking, the scatter and the trials'
curves (``screenshot-sweep.png``). Without a display it runs offscreen; timings depend on the machine,
so the figures differ from run to run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QPoint
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtWidgets import QWidget
from screenshots_common import ROOT, open_window, parser, settle

#: Each trial's budget (minutes) and the sweep's shape: 4 learning rates x 2 seeds.
TRIAL_MINUTES = 0.25
LR_VALUES = "1,0.3,0.1,0.03"
SEEDS = 2
WORKERS = 4


def grab_with_dialog(window: QWidget, dialog: QWidget) -> QPixmap:
    """The window with the dialog drawn over its middle, as a person sees them."""
    shot = window.grab()
    top = dialog.grab()
    painter = QPainter(shot)
    painter.drawPixmap(QPoint((shot.width() - top.width()) // 2, (shot.height() - top.height()) // 2), top)
    painter.end()
    return shot


def main(size: tuple[int, int] = (1280, 800), out_dir: Path = ROOT / "docs") -> None:
    from studio.tabs.train.sweep import LIST

    app, window = open_window(Path(tempfile.mkdtemp(prefix="studio-shots-sweep-")), size)
    window.show_tab("Train")
    train = window.tab("Train")
    settle(app, 0.5)
    train.launch.select_agent("ntuple")
    train.launch.set_budget(minutes=TRIAL_MINUTES)
    settle(app, 0.3)

    dialog = train.open_sweep_dialog()
    assert dialog is not None, "the form cannot make a run"
    row = dialog.rows["lr"]
    row.set_mode(LIST)
    row.listEdit.setText(LR_VALUES)
    dialog.seedsSpin.setValue(SEEDS)
    dialog.evalGamesSpin.setValue(20)
    dialog.workersSpin.setValue(WORKERS)
    dialog.resize(760, 600)
    settle(app, 0.5)
    grab_with_dialog(window, dialog).save(str(out_dir / "screenshot-sweep-dialog.png"))

    dialog.startButton.click()
    started = time.monotonic()
    while train.is_sweeping and time.monotonic() - started < 600:
        settle(app, 0.5)
    panel = train.sweepPanel
    panel.wait_ranked()
    settle(app, 1.0)
    train.curves.redraw()
    settle(app, 0.6)
    window.grab().save(str(out_dir / "screenshot-sweep.png"))
    window.close()
    print(f"wrote screenshot-sweep-dialog.png, screenshot-sweep.png to {out_dir}")


if __name__ == "__main__":
    args = parser(__doc__).parse_args()
    main(args.size, args.out)
