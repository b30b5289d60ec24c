"""Render stored runs' learning curves to a PNG with the studio's own curves widget (offscreen).

    python docs/make_learning_curves.py --data-dir DIR --run 1 [--run 2 ...] --out docs/curves.png
        [--metrics mean_score,rate_16384,...] [--x steps|time|episodes] [--size 1600x900] [--title TEXT]

Each run is read from the store as the Train tab re-opens a stored run (``store.get_run`` and
``store.run_metrics`` into a :class:`studio.widgets.curves.RunSeries`, ``add_columns``) and drawn by a
:class:`studio.widgets.curves.CurvesPanel`: the same panels, colours, legends, ticks and constants as
in the studio. Without ``--metrics`` the panels are those the runs' agents declare (for an n-tuple
network: score and its mean, max tile, TD error, the tile rates, speed; a constant such as the
learning rate is a line of text under the plots). ``--metrics`` keeps only the metrics named (their
store names, e.g. ``mean_score,rate_2048,td_error``). The widget's toolbar (smoothing slider, x axis
menu...) is left out of the picture; a title and a line naming the runs and the x axis take its place.

An unknown run id or metric, or a data dir that is missing or holds no store, is a one-line error
(exit status 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget  # noqa: E402

from agents.metrics import STANDARD, MetricInfo, metrics_of  # noqa: E402
from studio.text import duration  # noqa: E402
from studio.widgets.curves import X_AXES, CurvesPanel, RunSeries, format_si  # noqa: E402

#: --x choices: what a person types -> the widget's x axis key (its own keys are accepted too).
X_CHOICES = {"steps": "step", "moves": "step", "episodes": "episode", "games": "episode", "time": "elapsed"}
X_CHOICES.update({k: k for k in X_AXES})
#: Columns of ``run_metrics`` that are x values or ids, never metrics.
FIXED_COLUMNS = ("episode", "step", "elapsed", "kind", "id", "run_id")
DEFAULT_SIZE = (1600, 900)


class UsageError(Exception):
    """What the command line asked for cannot be drawn; the message is the one line said."""


@dataclasses.dataclass
class StoredRun:
    """A run read from the store: its summary and its metric columns."""

    run_id: int
    summary: Any
    columns: dict[str, np.ndarray]

    @property
    def agent(self) -> str:
        return str(self.summary.agent)

    def has_data(self, metric: str) -> bool:
        col = self.columns.get(metric)
        if col is None or np.asarray(col).dtype.kind not in "fiu":
            return False
        return bool(np.any(~np.isnan(np.asarray(col, dtype=np.float64))))

    def metric_names(self) -> list[str]:
        return [name for name in self.columns if name not in FIXED_COLUMNS and self.has_data(name)]

    def declared(self) -> tuple[MetricInfo, ...]:
        """What the run's agent declares (agents.metrics); for an agent unknown to this build, the
        standard metrics and one panel per other column of the store."""
        try:
            from agents.registry import get_agent_class

            return metrics_of(get_agent_class(self.agent))
        except Exception:
            known = {m.name for m in STANDARD}
            return STANDARD + tuple(MetricInfo(n) for n in self.metric_names() if n not in known)


# ------------------------------------------------------------------ reading the store
def open_store(data_dir: str) -> Any:
    """The store of ``data_dir``, opened as ``python main.py --data-dir DIR`` opens it; a missing dir
    (or one with no store in it) is a UsageError, and nothing is created."""
    from engine.paths import DataDirError, database_path
    from engine.store import GameStore

    path = Path(data_dir).expanduser()
    if not str(data_dir).strip():
        raise UsageError("the data dir is empty: give a directory")
    if not path.is_dir():
        raise UsageError(f"data dir {path} does not exist")
    try:
        if not database_path(path).is_file():
            raise UsageError(f"data dir {path} holds no studio store ({database_path(path).name})")
        return GameStore.open(path)
    except DataDirError as e:
        raise UsageError(str(e)) from None


def read_runs(store: Any, run_ids: Sequence[int]) -> list[StoredRun]:
    """Each run's summary and metric history, as the Train tab reads a stored run."""
    from engine.store import StoreError

    out: list[StoredRun] = []
    for rid in run_ids:
        try:
            summary = store.get_run(rid)
        except StoreError:
            there = ", ".join(str(r.id) for r in sorted(store.list_runs(), key=lambda r: r.id)) or "none"
            raise UsageError(f"no run {rid} in {store.path.parent} (runs there: {there})") from None
        out.append(StoredRun(rid, summary, store.run_metrics(rid)))
    return out


def chosen_infos(
    runs: Sequence[StoredRun], metrics: Sequence[str] | None
) -> list[tuple[MetricInfo, ...] | None]:
    """Per run, the metrics its panels draw: None (what its agent declares, the widget's choice) or
    only those named. A name no run knows, or one that no run has a value of, is a UsageError."""
    if not metrics:
        return [None] * len(runs)
    known: set[str] = set()
    for run in runs:
        known |= {m.name for m in run.declared()} | set(run.metric_names())
    for name in metrics:
        if name not in known:
            have = sorted({n for run in runs for n in run.metric_names()})
            raise UsageError(f"unknown metric {name!r} (the runs have: {', '.join(have)})")
        if not any(run.has_data(name) for run in runs):
            which = ", ".join(str(run.run_id) for run in runs)
            raise UsageError(f"metric {name!r} has no values in run{'s' * (len(runs) > 1)} {which}")
    out: list[tuple[MetricInfo, ...] | None] = []
    for run in runs:
        declared = {m.name: m for m in run.declared()}
        infos: list[MetricInfo] = []
        for name in metrics:
            info = declared.get(name)
            if info is None and name in run.columns:
                info = MetricInfo(name)  # stored but not declared: its own panel
            if info is None:
                continue
            if not info.drawn:
                info = dataclasses.replace(info, group=info.label)  # a counter, asked for: drawn
            infos.append(info)
        out.append(tuple(infos))
    return out


# ------------------------------------------------------------------ drawing
def describe(run: StoredRun) -> str:
    """ "run 1: ntuple, seed 1, 3,596 games, 3M moves, 0:07" for the line under the title."""
    s = run.summary
    parts = [f"run {run.run_id}: {run.agent}"]
    if s.seed is not None:
        parts.append(f"seed {s.seed}")
    parts.append(f"{int(s.episodes or 0):,} games")
    parts.append(f"{format_si(float(s.steps or 0))} moves")
    took = duration(float(s.elapsed or 0.0), missing="")
    if took:
        parts.append(took)
    return ", ".join(parts)


def hide_toolbar(panel: CurvesPanel) -> None:
    """The smoothing slider, x axis menu, log boxes and Fit button: controls, not part of a figure."""
    outer = panel.layout()
    first = outer.itemAt(0) if outer is not None else None
    row = first.layout() if first is not None else None
    if row is None:
        return
    for i in range(row.count()):
        item = row.itemAt(i)
        widget = item.widget() if item is not None else None
        if widget is not None:
            widget.hide()


class Figure(QWidget):
    """A title, a line naming the runs and the x axis, and the studio's curves panel."""

    def __init__(
        self,
        runs: Sequence[StoredRun],
        infos: Sequence[tuple[MetricInfo, ...] | None],
        x_axis: str = "step",
        title: str = "",
        smoothing: float = 0.0,
        log_x: bool = False,
        log_y: bool = False,
    ) -> None:
        super().__init__()
        self.setObjectName("learningCurves")
        self.setStyleSheet("QWidget#learningCurves { background: white; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 8)
        lay.setSpacing(4)
        agents = sorted({r.agent for r in runs})
        ids = ", ".join(str(r.run_id) for r in runs)
        default = f"Learning curves: run{'s' * (len(runs) > 1)} {ids} ({', '.join(agents)})"
        self.titleLabel = QLabel(title or default)
        self.titleLabel.setObjectName("titleLabel")
        self.titleLabel.setStyleSheet("font-size: 15pt; font-weight: bold; color: #222;")
        lay.addWidget(self.titleLabel)
        self.captionLabel = QLabel(f"x axis: {X_AXES[x_axis]} · " + " · ".join(describe(r) for r in runs))
        self.captionLabel.setObjectName("captionLabel")
        self.captionLabel.setWordWrap(True)
        self.captionLabel.setStyleSheet("color: #555;")
        lay.addWidget(self.captionLabel)
        self.curves = CurvesPanel()
        hide_toolbar(self.curves)
        lay.addWidget(self.curves, 1)
        shown: list[tuple[int, RunSeries]] = []
        for run, chosen in zip(runs, infos, strict=True):
            series = RunSeries(
                f"run {run.run_id} {run.agent}", agent=run.agent, run_id=run.run_id, infos=chosen
            )
            series.set_config(getattr(run.summary, "config", None))  # the games in its mean score
            series.add_columns(run.columns)
            shown.append((run.run_id, series))
        self.curves.set_x_axis(x_axis)
        if smoothing:
            self.curves.set_smoothing(smoothing)
        if log_x:
            self.curves.set_log_x(True)
        if log_y:
            self.curves.set_log_y(True)
        self.curves.set_runs(shown)

    def panels(self) -> dict[str, list[str]]:
        """Panel title -> what its legend lists, for the panels drawn."""
        return {t: self.curves.panel_legend(t) for t in self.curves.panel_titles()}


def render(figure: QWidget, curves: CurvesPanel, size: tuple[int, int], out: Path) -> tuple[int, int]:
    """Lay ``figure`` (holding ``curves``) out at ``size``, draw every plot and save it; the saved
    image's size."""
    app = QApplication.instance()
    figure.resize(*size)
    figure.show()
    for _ in range(3):  # layout, then the plots at their final size, then a last redraw
        if app is not None:
            app.processEvents()
        curves.fit()
        curves.redraw()
    if app is not None:
        app.processEvents()
    image = figure.grab().toImage()
    if (image.width(), image.height()) != size:  # a high-DPI screen: back to the pixels asked for
        image = image.scaled(
            *size, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out)):
        raise UsageError(f"cannot write {out}")
    return image.width(), image.height()


# ------------------------------------------------------------------ command line
def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} is not WIDTHxHEIGHT, e.g. 1600x900") from None
    if not (200 <= w <= 10000 and 150 <= h <= 10000):
        raise argparse.ArgumentTypeError(f"size {text!r} is out of range (200x150 to 10000x10000)")
    return w, h


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="make_learning_curves.py",
        description=(__doc__ or "").split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data-dir", required=True, help="the studio's data dir (as python main.py --data-dir)")
    p.add_argument("--run", type=int, action="append", required=True, metavar="ID", help="a run id (repeat)")
    p.add_argument(
        "--metrics",
        default="",
        help="comma-separated metric names to draw (default: the panels the runs' agents declare)",
    )
    p.add_argument("--x", default="steps", choices=list(X_CHOICES), help="x axis (default steps: moves)")
    p.add_argument("--size", type=parse_size, default=DEFAULT_SIZE, help="image size WxH (default 1600x900)")
    p.add_argument("--title", default="", help="title over the plots (default: the runs and agents)")
    p.add_argument("--smoothing", type=float, default=0.0, help="EMA weight 0..0.99, as the studio's slider")
    p.add_argument("--log-x", action="store_true", help="log x axis")
    p.add_argument("--log-y", action="store_true", help="log y axis where values are positive")
    p.add_argument("--out", required=True, type=Path, help="PNG file to write")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    app = QApplication.instance() or QApplication(sys.argv[:1])
    try:
        store = open_store(args.data_dir)
        try:
            runs = read_runs(store, list(dict.fromkeys(args.run)))
        finally:
            store.close()
        infos = chosen_infos(runs, metrics)
        figure = Figure(
            runs,
            infos,
            x_axis=X_CHOICES[args.x],
            title=args.title,
            smoothing=args.smoothing,
            log_x=args.log_x,
            log_y=args.log_y,
        )
        try:
            w, h = render(figure, figure.curves, args.size, args.out)
            panels = figure.panels()
            constants = list(figure.curves.constants)
        finally:
            figure.close()
            figure.deleteLater()
            app.processEvents()
    except UsageError as e:
        print(f"make_learning_curves.py: error: {e}", file=sys.stderr)
        return 2
    drawn = "; ".join(f"{t} ({', '.join(names)})" if names else t for t, names in panels.items())
    extra = f"; as text: {' · '.join(constants)}" if constants else ""
    print(f"wrote {args.out} ({w}x{h}): {drawn}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
