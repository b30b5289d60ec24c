"""The board widget: any rows x cols, classic colours, short slide / merge / spawn animations.

Moves are not applied here. The widget turns arrow / WASD presses into :attr:`BoardWidget.moveRequested`
and the owner applies them to the game at once (so a move is logged the moment it is made) and hands the
widget a *transition* to draw with :meth:`BoardWidget.push_transition`. Transitions queue up and play in
order; when several are waiting each plays faster, so a burst of key presses is never dropped nor
reordered and the board catches up with the game within a few frames.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QEasingCurve, QRectF, QSize, Qt, QVariantAnimation, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QKeyEvent, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QPushButton, QSizePolicy, QWidget

from engine import Direction, Spawn, slide_row_left
from studio.theme import Theme, digits_scale, load_theme

#: Keys the board answers: arrows and WASD (seed 000's controls).
#: The arrow key of each direction (what a person presses; tests and bench person press these).
ARROW_KEYS: dict[Direction, Qt.Key] = {
    Direction.UP: Qt.Key.Key_Up,
    Direction.LEFT: Qt.Key.Key_Left,
    Direction.DOWN: Qt.Key.Key_Down,
    Direction.RIGHT: Qt.Key.Key_Right,
}
_WASD = {
    Direction.UP: Qt.Key.Key_W,
    Direction.LEFT: Qt.Key.Key_A,
    Direction.DOWN: Qt.Key.Key_S,
    Direction.RIGHT: Qt.Key.Key_D,
}
KEY_DIRECTIONS: dict[int, Direction] = {
    key: direction for keys in (ARROW_KEYS, _WASD) for direction, key in keys.items()
}

SLIDE_PART = 0.6  # fraction of an animation spent sliding; the rest pops merges and grows spawns
GAP_RATIO = 0.12  # gap between cells as a fraction of a cell
#: Band around the board, in cells, where the hint arrow goes (beside the board, never over a tile).
HINT_MARGIN_RATIO = 0.4
#: The ring around a newly spawned tile: the web game's warm gold, a "new" mark that does not read as an
#: error (the tile itself also grows in, as in the web game, when the move is animated).
SPAWN_RING = "#f3c13a"
#: A second arrow (:meth:`BoardWidget.set_best_hint`): the move a reviewer prefers, beside the one played.
BEST_ARROW = "#2e9d57"


@dataclass(frozen=True)
class Motion:
    """One tile's path during a move: from ``src`` to ``dst`` (row, col); ``merged`` when it ends in a merge."""

    src: tuple[int, int]
    dst: tuple[int, int]
    value: int
    merged: bool


def _cell(direction: Direction, line: int, pos: int, rows: int, cols: int) -> tuple[int, int]:
    """Board cell of position ``pos`` (0 = at the wall the move pushes towards) on line ``line``."""
    if direction is Direction.LEFT:
        return (line, pos)
    if direction is Direction.RIGHT:
        return (line, cols - 1 - pos)
    if direction is Direction.UP:
        return (pos, line)
    return (rows - 1 - pos, line)


def tile_motions(before: np.ndarray, direction: Direction) -> list[Motion]:
    """Where every tile of ``before`` travels on ``direction`` (for drawing only).

    The merge rule is not re-implemented: each line's result comes from :func:`engine.slide_row_left`
    and tiles are matched to it in order (a result tile equal to the next tile is that tile moved, one
    equal to twice it is that tile merged with the following one).
    """
    rows, cols = before.shape
    n_lines, length = (rows, cols) if direction in (Direction.LEFT, Direction.RIGHT) else (cols, rows)
    out: list[Motion] = []
    for line in range(n_lines):
        cells = [_cell(direction, line, k, rows, cols) for k in range(length)]
        tiles = [(cell, int(before[cell])) for cell in cells if before[cell]]
        result, _ = slide_row_left([v for _, v in tiles] + [0] * (length - len(tiles)))
        i = 0
        for j, value in enumerate(result):
            if value == 0 or i >= len(tiles):
                break
            src, v = tiles[i]
            if value == v:
                out.append(Motion(src, cells[j], v, False))
                i += 1
            else:  # value == 2 * v: tiles i and i + 1 meet at cell j
                out.append(Motion(src, cells[j], v, True))
                out.append(Motion(tiles[i + 1][0], cells[j], v, True))
                i += 2
    return out


@dataclass
class _Transition:
    before: np.ndarray
    after: np.ndarray
    motions: list[Motion]
    spawns: tuple[Spawn, ...]


def _ease_out(t: float) -> float:
    return 1.0 - (1.0 - t) ** 3


class BoardWidget(QWidget):
    """Draws a board of tile values; with ``interactive`` it emits moves for arrow / WASD presses.

    With ``hint_margin`` a thin band is kept free around the board for the hint arrow
    (:meth:`set_hint`), drawn beside the edge the move pushes towards, so it never covers a tile.
    A board without that band makes room for it the first time a hint is set.
    """

    moveRequested = Signal(object)  # Direction
    newGameRequested = Signal()
    animationFinished = Signal()  # the queue ran dry: what is drawn is the latest board

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        interactive: bool = True,
        theme: Theme | None = None,
        hint_margin: bool = False,
    ):
        super().__init__(parent)
        self.setObjectName("board")
        self.theme = theme or load_theme()
        self.interactive = interactive
        self.hint_margin = hint_margin
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus if interactive else Qt.FocusPolicy.NoFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(160, 160)
        self._board = np.zeros((4, 4), dtype=np.int64)
        self._marked: tuple[tuple[int, int], ...] = ()
        self._hint: Direction | None = None
        self._best_hint: Direction | None = None
        self._queue: deque[_Transition] = deque()
        self._current: _Transition | None = None
        self._progress = 1.0
        self._font_cache: dict[tuple[int, int], QFont] = {}
        self.animation_ms = 110
        self._anim = QVariantAnimation(self)
        self._anim.setStartValue(0.0)
        self._anim.setEndValue(1.0)
        self._anim.setEasingCurve(QEasingCurve.Type.Linear)
        self._anim.valueChanged.connect(self._on_progress)
        self._anim.finished.connect(self._next_transition)
        self._overlay_title = ""
        self._overlay_detail = ""
        self.overlay_button = QPushButton("New game", self)
        self.overlay_button.setObjectName("overlayNewGameButton")
        self.overlay_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.overlay_button.setStyleSheet(
            f"QPushButton {{ background: {self.theme.accent}; color: {self.theme.text_light}; border: none;"
            " border-radius: 4px; padding: 8px 18px; font-weight: bold; font-size: 15px; }"
            "QPushButton:hover { background: #9f8b77; }"
        )
        self.overlay_button.clicked.connect(self.newGameRequested)
        self.overlay_button.hide()

    # ------------------------------------------------------------------ state
    @property
    def board(self) -> np.ndarray:
        """The latest board handed to the widget (what it shows once animations are done)."""
        return self._board.copy()

    @property
    def marked_cells(self) -> tuple[tuple[int, int], ...]:
        """Cells of the newly spawned tiles (a gold ring round each; the start tiles of a game are
        not new, the owner passes no spawns for them)."""
        return self._marked

    @property
    def is_animating(self) -> bool:
        return self._current is not None

    @property
    def pending_transitions(self) -> int:
        return len(self._queue) + (1 if self._current is not None else 0)

    def set_board(self, board: np.ndarray, spawns: Iterable[Spawn] = ()) -> None:
        """Show ``board`` now (no animation), dropping queued transitions: a new game, a replay jump."""
        self._queue.clear()
        self._current = None
        self._anim.stop()
        self._progress = 1.0
        b = np.asarray(board, dtype=np.int64)
        if b.shape != self._board.shape:
            self._font_cache.clear()
            self.updateGeometry()
        self._board = b.copy()
        self._marked = tuple((s.row, s.col) for s in spawns)
        self.update()

    def push_transition(
        self, before: np.ndarray, direction: Direction, after: np.ndarray, spawns: Sequence[Spawn]
    ) -> None:
        """Animate the move ``before -> after`` (after = slid board plus ``spawns``), after any queued ones."""
        before = np.asarray(before, dtype=np.int64).copy()
        after = np.asarray(after, dtype=np.int64).copy()
        if self.animation_ms <= 0 or not self.isVisible():
            self.set_board(after, spawns)
            return
        self._queue.append(_Transition(before, after, tile_motions(before, direction), tuple(spawns)))
        self._board = after
        self._marked = tuple((s.row, s.col) for s in spawns)
        if self._current is None:
            self._next_transition()
        else:
            # Keys arrive faster than animations end: speed up the rest instead of lagging behind.
            self._anim.setDuration(self._duration())

    def finish_animations(self) -> None:
        """Jump to the final board (tests, tab switches)."""
        self._queue.clear()
        self._anim.stop()
        self._current = None
        self._progress = 1.0
        self.update()
        self.animationFinished.emit()

    def _arrow(self, direction: Direction | None) -> Direction | None:
        """``direction``, for an arrow beside the board that is repainted now; the room for the arrows
        is made with the first one (the board then keeps its size)."""
        if direction is not None and not self.hint_margin:
            self.hint_margin = True
            self.updateGeometry()
            self._place_overlay_button()
        self.update()
        return direction

    def set_hint(self, direction: Direction | None) -> None:
        """Draw an arrow for the agent's choice beside the board (None clears it)."""
        self._hint = self._arrow(direction)

    @property
    def hint(self) -> Direction | None:
        return self._hint

    def set_best_hint(self, direction: Direction | None) -> None:
        """A second arrow, in :data:`BEST_ARROW` green, for a better move than the hint's (a review's
        best move beside the move played); the same direction as the hint paints the hint green."""
        self._best_hint = self._arrow(direction)

    @property
    def best_hint(self) -> Direction | None:
        return self._best_hint

    def show_overlay(self, title: str, detail: str = "", button: bool = True) -> None:
        """Cover the board (game over): a title, a line of detail and a "New game" button."""
        self._overlay_title = title
        self._overlay_detail = detail
        self.overlay_button.setVisible(button)
        self._place_overlay_button()
        self.update()

    def hide_overlay(self) -> None:
        self._overlay_title = ""
        self._overlay_detail = ""
        self.overlay_button.hide()
        self.update()

    @property
    def overlay_visible(self) -> bool:
        return bool(self._overlay_title)

    # ------------------------------------------------------------------ animation
    def _duration(self) -> int:
        waiting = len(self._queue)
        return max(15, int(self.animation_ms / (1 + waiting)))

    def _next_transition(self) -> None:
        if self._queue:
            self._current = self._queue.popleft()
            self._progress = 0.0
            self._anim.stop()
            self._anim.setDuration(self._duration())
            self._anim.start()
        else:
            was_running = self._current is not None
            self._current = None
            self._progress = 1.0
            self.update()
            if was_running:
                self.animationFinished.emit()

    def _on_progress(self, value: object) -> None:
        self._progress = float(value)  # type: ignore[arg-type]
        self.update()

    # ------------------------------------------------------------------ input
    def keyPressEvent(self, event: QKeyEvent) -> None:
        direction = KEY_DIRECTIONS.get(event.key()) if self.interactive else None
        if direction is None or event.modifiers() & (
            Qt.KeyboardModifier.ControlModifier
            | Qt.KeyboardModifier.AltModifier
            | Qt.KeyboardModifier.MetaModifier
        ):
            super().keyPressEvent(event)
            return
        event.accept()
        self.moveRequested.emit(direction)

    # ------------------------------------------------------------------ geometry
    def _margin_cells(self) -> float:
        return 2 * HINT_MARGIN_RATIO if self.hint_margin else 0.0

    def sizeHint(self) -> QSize:
        rows, cols = self._board.shape
        cell = max(40, min(110, 480 // max(rows, cols)))
        m = self._margin_cells()
        return QSize(
            int(cell * (cols + (cols + 1) * GAP_RATIO + m)), int(cell * (rows + (rows + 1) * GAP_RATIO + m))
        )

    def _layout(self) -> tuple[QRectF, float, float]:
        """(board rectangle, cell size, gap) fitting the widget (and the hint band, if any), centred."""
        rows, cols = self._board.shape
        w, h = float(self.width()), float(self.height())
        m = self._margin_cells()
        cell = min(w / (cols + (cols + 1) * GAP_RATIO + m), h / (rows + (rows + 1) * GAP_RATIO + m))
        gap = cell * GAP_RATIO
        bw, bh = cols * cell + (cols + 1) * gap, rows * cell + (rows + 1) * gap
        return QRectF((w - bw) / 2, (h - bh) / 2, bw, bh), cell, gap

    def board_rect(self) -> QRectF:
        """Where the board (its background and every tile) is drawn."""
        return self._layout()[0]

    def arrow_rect(self) -> QRectF | None:
        """Where the hint arrow is drawn (in the band beside the board's edge it points at); None
        when no arrow is shown."""
        if self._hint is None or self.overlay_visible:
            return None
        return self._arrow_rect(self._hint)

    def best_arrow_rect(self) -> QRectF | None:
        """Where the best-move arrow is drawn; None when none is shown."""
        if self._best_hint is None or self.overlay_visible:
            return None
        return self._arrow_rect(self._best_hint)

    def _arrow_rect(self, d: Direction) -> QRectF:
        rect, cell, _ = self._layout()
        band = cell * HINT_MARGIN_RATIO
        thick = band * 0.62
        length = min(cell * 1.3, rect.width() * 0.8, rect.height() * 0.8)
        off = (band - thick) / 2  # centred in the band: clear of the board and of the widget's edge
        if d in (Direction.UP, Direction.DOWN):
            y = rect.top() - band + off if d is Direction.UP else rect.bottom() + off
            return QRectF(rect.center().x() - length / 2, y, length, thick)
        x = rect.left() - band + off if d is Direction.LEFT else rect.right() + off
        return QRectF(x, rect.center().y() - length / 2, thick, length)

    def cell_rect(self, row: float, col: float) -> QRectF:
        rect, cell, gap = self._layout()
        return QRectF(rect.x() + gap + col * (cell + gap), rect.y() + gap + row * (cell + gap), cell, cell)

    def resizeEvent(self, event: object) -> None:
        self._font_cache.clear()
        self._place_overlay_button()

    def _place_overlay_button(self) -> None:
        b = self.overlay_button
        b.adjustSize()
        rect, _, _ = self._layout()
        b.move(int(rect.center().x() - b.width() / 2), int(rect.center().y() + rect.height() * 0.16))

    # ------------------------------------------------------------------ painting
    def _font_for(self, value: int, cell: float) -> QFont:
        digits = len(str(value))
        key = (digits, int(cell))
        font = self._font_cache.get(key)
        if font is None:
            font = QFont()
            font.setFamilies(["Clear Sans", "Helvetica Neue", "Arial", "DejaVu Sans"])
            font.setBold(True)
            size = max(6.0, cell * digits_scale(digits))
            font.setPixelSize(int(size))
            # Shrink further if this font runs wider than the tile (7-digit tiles on a narrow window).
            width = QFontMetricsF(font).horizontalAdvance("8" * digits)
            if width > cell * 0.86:
                font.setPixelSize(max(6, int(size * cell * 0.86 / width)))
            self._font_cache[key] = font
        return font

    def _draw_tile(
        self, p: QPainter, rect: QRectF, value: int, cell: float, *, scale: float = 1.0, marked: bool = False
    ) -> None:
        if scale != 1.0:
            c = rect.center()
            rect = QRectF(0, 0, rect.width() * scale, rect.height() * scale)
            rect.moveCenter(c)
        radius = max(2.0, cell * 0.06)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(self.theme.tile_color(value)))
        p.drawRoundedRect(rect, radius, radius)
        if value == 0:
            return
        if marked:  # a ring in the gap round the tile: the tile's own colours stay as they are
            pen = QPen(QColor(SPAWN_RING))
            width = max(1.5, cell * 0.03)
            pen.setWidthF(width)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            out = width / 2 + max(0.5, cell * 0.008)
            p.drawRoundedRect(rect.adjusted(-out, -out, out, out), radius + out, radius + out)
        p.setPen(QColor(self.theme.text_color(value)))
        font = self._font_for(value, cell)
        if scale != 1.0:
            font = QFont(font)
            font.setPixelSize(max(1, int(font.pixelSize() * scale)))
        p.setFont(font)
        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, str(value))

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        rect, cell, _ = self._layout()
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(self.theme.board))
        p.drawRoundedRect(rect, cell * 0.08, cell * 0.08)
        rows, cols = self._board.shape
        for r in range(rows):
            for c in range(cols):
                self._draw_tile(p, self.cell_rect(r, c), 0, cell)
        if self._current is not None:
            self._paint_transition(p, self._current, cell)
        else:
            marked = set(self._marked)
            for r in range(rows):
                for c in range(cols):
                    v = int(self._board[r, c])
                    if v:
                        self._draw_tile(p, self.cell_rect(r, c), v, cell, marked=(r, c) in marked)
        arrow = self.arrow_rect()
        best = self.best_arrow_rect()
        if arrow is not None and self._hint is not None:
            same = self._best_hint == self._hint
            self._paint_arrow(p, arrow, self._hint, BEST_ARROW if same else None)
        if best is not None and self._best_hint is not None and self._best_hint != self._hint:
            self._paint_arrow(p, best, self._best_hint, BEST_ARROW)
        if self.overlay_visible:
            self._paint_overlay(p, rect, cell)
        p.end()

    def _paint_transition(self, p: QPainter, t: _Transition, cell: float) -> None:
        if t.before.shape != self._board.shape:
            return
        if self._progress < SLIDE_PART:
            k = _ease_out(self._progress / SLIDE_PART)
            for m in t.motions:  # tiles that stay put first, so that movers pass over them
                if m.src == m.dst:
                    self._draw_tile(p, self.cell_rect(*m.src), m.value, cell)
            for m in t.motions:
                if m.src != m.dst:
                    r = m.src[0] + (m.dst[0] - m.src[0]) * k
                    c = m.src[1] + (m.dst[1] - m.src[1]) * k
                    self._draw_tile(p, self.cell_rect(r, c), m.value, cell)
            return
        q = (self._progress - SLIDE_PART) / (1.0 - SLIDE_PART)
        merged = {m.dst for m in t.motions if m.merged}
        spawned = {(s.row, s.col) for s in t.spawns}
        rows, cols = t.after.shape
        for r in range(rows):
            for c in range(cols):
                v = int(t.after[r, c])
                if not v:
                    continue
                if (r, c) in spawned:
                    self._draw_tile(
                        p, self.cell_rect(r, c), v, cell, scale=max(0.05, _ease_out(q)), marked=True
                    )
                elif (r, c) in merged:
                    self._draw_tile(
                        p, self.cell_rect(r, c), v, cell, scale=1.0 + 0.14 * math.sin(math.pi * q)
                    )
                else:
                    self._draw_tile(p, self.cell_rect(r, c), v, cell)

    def _paint_arrow(
        self, p: QPainter, rect: QRectF, direction: Direction, colour_name: str | None = None
    ) -> None:
        """A flat arrow head in ``rect`` (beside the board) pointing the way the agent would move."""
        path = QPainterPath()
        if direction is Direction.UP:
            path.moveTo(rect.center().x(), rect.top())
            path.lineTo(rect.right(), rect.bottom())
            path.lineTo(rect.left(), rect.bottom())
        elif direction is Direction.DOWN:
            path.moveTo(rect.center().x(), rect.bottom())
            path.lineTo(rect.left(), rect.top())
            path.lineTo(rect.right(), rect.top())
        elif direction is Direction.LEFT:
            path.moveTo(rect.left(), rect.center().y())
            path.lineTo(rect.right(), rect.top())
            path.lineTo(rect.right(), rect.bottom())
        else:
            path.moveTo(rect.right(), rect.center().y())
            path.lineTo(rect.left(), rect.bottom())
            path.lineTo(rect.left(), rect.top())
        path.closeSubpath()
        p.save()
        colour = QColor(colour_name or self.theme.hint_arrow)
        colour.setAlphaF(0.85)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(colour)
        p.drawPath(path)
        p.restore()

    def _paint_overlay(self, p: QPainter, rect: QRectF, cell: float) -> None:
        colour = QColor(self.theme.overlay)
        colour.setAlphaF(self.theme.overlay_alpha)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(colour)
        p.drawRoundedRect(rect, cell * 0.08, cell * 0.08)
        font = QFont()
        font.setFamilies(["Clear Sans", "Helvetica Neue", "Arial", "DejaVu Sans"])
        font.setBold(True)
        font.setPixelSize(max(12, int(min(rect.width(), rect.height()) * 0.11)))
        p.setFont(font)
        p.setPen(QColor(self.theme.text_dark))
        title_rect = QRectF(rect.x(), rect.y(), rect.width(), rect.height() * 0.5)
        p.drawText(
            title_rect, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom, self._overlay_title
        )
        if self._overlay_detail:
            font.setBold(False)
            font.setPixelSize(max(10, int(min(rect.width(), rect.height()) * 0.045)))
            p.setFont(font)
            detail_rect = QRectF(rect.x(), rect.center().y() + 4, rect.width(), rect.height() * 0.1)
            p.drawText(
                detail_rect, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, self._overlay_detail
            )
