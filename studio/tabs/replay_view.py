"""The right-hand side of the Replay tab: the game's title, the board with the evaluation graph beside
it, the verdict and step lines, the slider, the playback row and the review rows.

The view only shows: the tab says which position of which game (:meth:`ReplayView.show_length`,
:meth:`ReplayView.show_position`) and what the review says of its move (:meth:`ReplayView.show_verdict`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from studio.tabs.replay_playback import PlaybackBar
from studio.tabs.replay_review import ReviewPanel, verdict_text
from studio.widgets.board import BoardWidget
from studio.widgets.review_graph import ReviewGraph
from studio.widgets.slider import JumpSlider

if TYPE_CHECKING:
    from engine.store import GameStore
    from studio.services.review import GameReview


class ReplayView(QWidget):
    """One game at one position, and the controls under it."""

    def __init__(self, store: GameStore, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        rcol = QVBoxLayout(self)
        rcol.setContentsMargins(6, 0, 0, 0)
        self.titleLabel = QLabel("Pick a game on the left")
        self.titleLabel.setObjectName("replayTitle")
        self.titleLabel.setStyleSheet("font-size: 15px; font-weight: bold;")
        self.board = BoardWidget(self, interactive=False, hint_margin=True)  # the next-move arrow beside it
        self.board.setObjectName("replayBoard")
        self.stepLabel = QLabel("")
        self.stepLabel.setObjectName("replayStepLabel")
        self.stepLabel.setStyleSheet("font-size: 14px;")
        self.stepLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.replaySlider = JumpSlider(Qt.Orientation.Horizontal)  # a click on the track jumps there
        self.replaySlider.setObjectName("replaySlider")
        self.replaySlider.setRange(0, 0)
        self.replaySlider.setPageStep(10)

        self.verdictLabel = QLabel("")
        self.verdictLabel.setObjectName("replayVerdictLabel")
        self.verdictLabel.setStyleSheet("font-size: 14px;")
        self.verdictLabel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.graph = ReviewGraph(self)
        self.graph.setObjectName("replayReviewGraph")
        self.graph.setMinimumWidth(260)
        self.graph.setVisible(False)  # shown with a review: empty, its axes read "move (x0.001)"
        self.playback = PlaybackBar(settings)
        self.reviewPanel = ReviewPanel(store)

        rcol.addWidget(self.titleLabel)
        # The graph stands beside the board, not under it: under it, it took the height the board
        # needs and the board shrank to a quarter of its area when a review appeared.
        boardRow = QHBoxLayout()
        boardRow.addWidget(self.board, 1)
        boardRow.addWidget(self.graph, 1)
        rcol.addLayout(boardRow, 1)
        rcol.addWidget(self.verdictLabel)
        rcol.addWidget(self.stepLabel)
        rcol.addWidget(self.replaySlider)
        rcol.addWidget(self.playback)
        rcol.addWidget(self.reviewPanel)

    def show_length(self, n_positions: int) -> None:
        """A game of ``n_positions`` positions is shown; the slider and the jump box reach its end."""
        self.replaySlider.blockSignals(True)
        self.replaySlider.setRange(0, n_positions - 1)
        self.replaySlider.setPageStep(max(1, (n_positions - 1) // 20))
        self.replaySlider.blockSignals(False)
        self.playback.set_length(n_positions)

    def show_position(self, i: int) -> None:
        """The slider, the jump box and the graph's marker at position ``i`` (no signal sent)."""
        self.graph.set_position(i)
        self.replaySlider.blockSignals(True)
        self.replaySlider.setValue(i)
        self.replaySlider.blockSignals(False)
        self.playback.show_position(i)

    def show_verdict(self, review: GameReview | None, grade: Any, position: int, n_moves: int) -> None:
        """The verdict on the move about to be played at ``position`` (shown while there is a review)."""
        self.verdictLabel.setVisible(review is not None)
        if review is None:
            self.verdictLabel.setText("")
        elif grade is not None:
            self.verdictLabel.setText(verdict_text(grade, review.points, review.mixed))
        elif position >= n_moves:
            self.verdictLabel.setText("Final position: no move to grade")
        else:
            self.verdictLabel.setText(
                f"Next move {position + 1}: not reviewed yet (Review goes on from here)"
            )
