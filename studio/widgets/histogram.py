"""A small bar chart of games that reached at least each tile, each bar in its tile's colour (the Games tab's
summary). Seed 004's table and players count "reached at least 2048", not "ended with exactly 2048": a
game that made 4096 reached 2048 too, so the bars fall from left to right."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from agents.arena import tile_thresholds
from studio.theme import Theme, load_theme
from studio.widgets.curves.ticks import tile_label


class TileHistogram(QWidget):
    """``set_counts({256: 3, 512: 10, 1024: 2})`` (games by their max tile) draws one labelled bar per
    tile from 32 (lower on small boards) to the largest: the games that reached at least that tile
    (``reached``: {32: 15, 64: 15, 128: 15, 256: 15, 512: 12, 1024: 2})."""

    def __init__(
        self,
        parent: QWidget | None = None,
        theme: Theme | None = None,
        title: str = "games that reached at least each tile",
    ) -> None:
        super().__init__(parent)
        self.title = title
        self.setObjectName("tileHistogram")
        self.theme = theme or load_theme()
        self._counts: dict[int, int] = {}
        self.setMinimumHeight(90)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    @property
    def counts(self) -> dict[int, int]:
        """Games by their max tile, as given."""
        return dict(self._counts)

    @property
    def reached(self) -> dict[int, int]:
        """What the bars show: games whose max tile is >= each tile."""
        return {
            t: sum(c for tile, c in self._counts.items() if tile >= t)
            for t in tile_thresholds(list(self._counts))
        }

    def set_counts(self, counts: Mapping[int, int]) -> None:
        self._counts = {int(k): int(v) for k, v in sorted(counts.items()) if v}
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(360, 120)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        w, h = self.width(), self.height()
        if not self._counts:
            p.setPen(QColor("#8a8178"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no games")
            p.end()
            return
        bars = self.reached
        n = len(bars)
        top = max(bars.values())
        label_h, count_h = 16.0, 14.0
        top_margin = 16.0  # the title
        slot = min(w / n, 90.0)  # a few bars stay together instead of spreading over the whole width
        left = (w - slot * n) / 2
        bar_w = min(56.0, slot * 0.8)
        small = QFont(self.font())
        small.setPixelSize(11)
        p.setFont(small)
        p.setPen(QColor("#8a8178"))
        p.drawText(QRectF(0, 0, w, 14), Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, self.title)
        for i, (tile, count) in enumerate(bars.items()):
            x = left + i * slot + (slot - bar_w) / 2
            bar_h = max(2.0 if count else 0.0, (h - label_h - count_h - top_margin) * count / top)
            rect = QRectF(x, h - label_h - bar_h, bar_w, bar_h)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(self.theme.tile_color(tile)))
            p.drawRoundedRect(rect, 3, 3)
            p.setPen(QColor(self.theme.text_dark))
            p.drawText(
                QRectF(left + i * slot, rect.top() - count_h, slot, count_h),
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom,
                str(count),
            )
            p.drawText(
                QRectF(left + i * slot, h - label_h, slot, label_h),
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter,
                "≥" + tile_label(tile.bit_length() - 1, whole_below=14),  # fits under narrow bars
            )
        p.end()
