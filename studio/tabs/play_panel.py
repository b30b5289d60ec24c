"""The Play tab's side panel beside the board: title, SCORE / BEST, the coach badge, the game's line
and buttons, and the agent box (which agent, its hint table, Watch / Step and the speed).

Widgets only: the tab connects their signals and decides what they show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from agents.hints import hint_texts
from engine import DIRECTIONS, Direction
from studio.settings import get_bool, get_int
from studio.tabs.play_agents import AgentPicker
from studio.tabs.play_coach import ARROWS, CoachBadge
from studio.theme import load_theme
from studio.thinking import ThinkResult

if TYPE_CHECKING:
    from engine.store import GameRecorder
    from studio.services.review import PlayNetwork

MAX_SPEED = 60  # the slider's top notch means "as fast as the agent thinks"


class ScoreBox(QFrame):
    """The classic game's score / best boxes."""

    def __init__(self, caption: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        theme = load_theme()
        self.setStyleSheet(f"QFrame {{ background: {theme.board}; border-radius: 5px; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 6)
        layout.setSpacing(0)
        cap = QLabel(caption)
        cap.setAlignment(Qt.AlignmentFlag.AlignCenter)
        cap.setStyleSheet(
            f"color: {theme.tiles.get(2, theme.empty)}; font-weight: bold; font-size: 11px; background: transparent;"
        )
        self.value = QLabel("0")
        self.value.setObjectName(name)
        self.value.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.value.setStyleSheet("color: white; font-weight: bold; font-size: 22px; background: transparent;")
        layout.addWidget(cap)
        layout.addWidget(self.value)


class AgentBox(QGroupBox):
    """The agent panel: which agent, its hint (a value per move), the coach, Watch / Step and the speed."""

    def __init__(
        self,
        settings: QSettings,
        parent: QWidget | None = None,
        *,
        networks: Callable[[], list[PlayNetwork]] | None = None,
    ) -> None:
        super().__init__("Agent", parent)
        grid = QVBoxLayout(self)
        self.agentCombo = AgentPicker(settings, networks=networks)
        grid.addWidget(self.agentCombo)
        hint_row = QHBoxLayout()
        self.hintButton = QPushButton("Hint")
        self.hintButton.setObjectName("hintButton")
        self.hintButton.setToolTip("Ask the agent to rate each legal move (H)")
        self.autoHintCheck = QCheckBox("after every move")
        self.autoHintCheck.setObjectName("autoHintCheck")
        hint_row.addWidget(self.hintButton)
        hint_row.addWidget(self.autoHintCheck)
        grid.addLayout(hint_row)
        self.coachCheck = QCheckBox("Coach: grade my moves")
        self.coachCheck.setObjectName("coachCheck")
        self.coachCheck.setToolTip(
            "After each of your moves, a badge under the score says how good it was (best, good, "
            "inaccuracy, mistake, blunder), which move was better and the expected points it gave up. "
            "The default reviewer grades (the one Replay, Progress and the review command use). "
            "While the coach is on, Hint asks that reviewer too, so hint and grade agree."
        )
        self.coachCheck.setChecked(get_bool(settings, "play/coach", False))
        grid.addWidget(self.coachCheck)
        self.hintGrid = QGridLayout()
        self.hintLabels: dict[Direction, tuple[QLabel, QLabel]] = {}
        for i, d in enumerate(DIRECTIONS):
            name = QLabel(f"{ARROWS[d]}  {d.label}")
            value = QLabel("")
            value.setObjectName(f"hintValue_{d.label}")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.hintGrid.addWidget(name, i, 0)
            self.hintGrid.addWidget(value, i, 1)
            self.hintLabels[d] = (name, value)
        grid.addLayout(self.hintGrid)
        self.hintStatus = QLabel("")
        self.hintStatus.setObjectName("hintStatus")
        self.hintStatus.setWordWrap(True)
        self.hintStatus.setStyleSheet("color: #8a8178;")
        grid.addWidget(self.hintStatus)
        grid.addLayout(self._build_watch_row())
        grid.addLayout(self._build_speed_row(get_int(settings, "play/speed", 5)))

    def _build_watch_row(self) -> QHBoxLayout:
        watch_row = QHBoxLayout()
        self.autoplayButton = QPushButton("▶ Watch")
        self.autoplayButton.setObjectName("autoplayButton")
        self.autoplayButton.setCheckable(True)
        self.autoplayButton.setToolTip(
            "Let the agent play this game on; press any arrow to take over (Space)"
        )
        self.autoplayButton.toggled.connect(
            lambda on: self.autoplayButton.setText("❚❚ Pause" if on else "▶ Watch")
        )
        self.stepButton = QPushButton("Step")
        self.stepButton.setObjectName("stepButton")
        self.stepButton.setToolTip("The agent makes one move (.)")
        watch_row.addWidget(self.autoplayButton)
        watch_row.addWidget(self.stepButton)
        return watch_row

    def _build_speed_row(self, speed: int) -> QHBoxLayout:
        speed_row = QHBoxLayout()
        self.speedSlider = QSlider(Qt.Orientation.Horizontal)
        self.speedSlider.setObjectName("speedSlider")
        self.speedSlider.setRange(1, MAX_SPEED)
        self.speedSlider.setValue(speed)
        self.speedSlider.valueChanged.connect(self._show_speed)
        self.speedLabel = QLabel()
        self.speedLabel.setMinimumWidth(70)
        speed_row.addWidget(QLabel("Speed"))
        speed_row.addWidget(self.speedSlider, 1)
        speed_row.addWidget(self.speedLabel)
        self._show_speed(self.speedSlider.value())
        return speed_row

    def _show_speed(self, value: int) -> None:
        self.speedLabel.setText("max" if value >= MAX_SPEED else f"{value} moves/s")

    def watch_delay_ms(self) -> int:
        """The pause between a watched agent's moves at the chosen speed (0 at "max")."""
        v = self.speedSlider.value()
        return 0 if v >= MAX_SPEED else int(1000 / v)

    def show_hint(self, result: ThinkResult, *, arrow: bool, mask: Any) -> tuple[Direction | None, bool]:
        """Fill the hint table (``mask``: the legal moves, None: the rated ones): what each move gives up
        against the best, in words a player reads (:func:`agents.hints.hint_texts`); the agent's choice
        in bold. Returns the best move (None: no preference) and whether the agent had none."""
        self.set_hint_status("")
        values = result.values or {}
        hints = hint_texts(values, result.value_kind, result.choice)
        for d, (name, label) in self.hintLabels.items():
            weight = "bold" if d == result.choice else "normal"
            colour = f" color: {load_theme().hint_arrow};" if d == hints.best else ""
            name.setStyleSheet(f"font-weight: {weight};{colour}")
            label.setStyleSheet(f"font-weight: {weight};{colour}")
            label.setText(hints.texts.get(d, ""))
            label.setToolTip(f"{result.agent_name}'s value: {values[d]:,.6g}" if d in values else "")
            name.setEnabled(bool(mask[d]) if mask is not None else d in values)
        choice = f"{ARROWS[result.choice]} {result.choice.label}" if result.choice is not None else "-"
        ms = f"{result.seconds * 1000:.0f} ms"
        extra = f"; {hints.summary}" if hints.summary else ""
        no_preference = result.values is not None and hints.best is None
        who = f"{result.agent_name} (the coach's reviewer)" if result.by_reviewer else result.agent_name
        if result.values is None:
            self.hintStatus.setText(f"{who} does not rate moves; its choice: {choice}")
        elif no_preference and arrow:
            self.hintStatus.setText(f"{who} has no preference here ({ms})")
        elif arrow:
            self.hintStatus.setText(f"{who}: {choice}{extra} ({ms})")
        else:
            self.hintStatus.setText(f"{who} played {choice}{extra} ({ms})")
        return hints.best, no_preference

    def clear_hint(self) -> None:
        for name, label in self.hintLabels.values():
            label.setToolTip("")
            label.setText("")
            name.setStyleSheet("")
            label.setStyleSheet("")
            name.setEnabled(True)
        self.set_hint_status("")

    def set_hint_status(self, text: str, *, fault: bool = False) -> None:
        """The line under the hint table; an agent's fault in red (it stays until the next answer)."""
        self.hintStatus.setText(text)
        self.hintStatus.setStyleSheet("color: #c0392b;" if fault else "color: #8a8178;")


class PlaySidePanel(QWidget):
    """Everything right of the board, 270 pixels wide."""

    def __init__(
        self,
        settings: QSettings,
        parent: QWidget | None = None,
        *,
        networks: Callable[[], list[PlayNetwork]] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("playSidePanel")
        self.setFixedWidth(270)
        col = QVBoxLayout(self)
        col.setContentsMargins(6, 0, 0, 0)
        title = QLabel("2048")
        title.setStyleSheet(f"color: {load_theme().text_dark}; font-size: 44px; font-weight: bold;")
        boxes = QHBoxLayout()
        self.score_box = ScoreBox("SCORE", "scoreLabel")
        self.best_box = ScoreBox("BEST", "bestLabel")
        boxes.addWidget(self.score_box)
        boxes.addWidget(self.best_box)
        head = QHBoxLayout()
        head.addWidget(title)
        head.addStretch(1)
        self.movesLabel = QLabel()
        self.movesLabel.setObjectName("movesLabel")
        self.gameInfoLabel = QLabel()
        self.gameInfoLabel.setObjectName("gameInfoLabel")
        self.gameInfoLabel.setStyleSheet("color: #8a8178;")
        self.newGameButton = QPushButton("New game…")
        self.newGameButton.setObjectName("newGameButton")
        self.newGameButton.setToolTip("Start a new game: board size and spawn rules (Ctrl+N)")
        self.takeBackButton = QPushButton("Take back")
        self.takeBackButton.setObjectName("takeBackButton")
        self.takeBackButton.setToolTip(
            "Take back the last move: the board, score and next tile as before it (Ctrl+Z)"
        )
        col.addLayout(head)
        col.addLayout(boxes)
        self.coachBadge = CoachBadge()
        col.addWidget(self.coachBadge)
        col.addWidget(self.movesLabel)
        col.addWidget(self.gameInfoLabel)
        game_row = QHBoxLayout()
        game_row.addWidget(self.newGameButton)
        game_row.addWidget(self.takeBackButton)
        col.addLayout(game_row)
        self.agentBox = agent = AgentBox(settings, networks=networks)
        col.addWidget(agent)
        keys = QLabel("Arrows or WASD move. Any move of yours takes over from a watched agent.")
        keys.setWordWrap(True)
        keys.setStyleSheet("color: #8a8178;")
        col.addWidget(keys)
        col.addStretch(1)
        # The board keeps the keyboard: clicking Hint or the speed slider must not steal the arrows.
        for w in (
            self.newGameButton,
            self.takeBackButton,
            agent.hintButton,
            agent.autoHintCheck,
            agent.coachCheck,
            agent.autoplayButton,
            agent.stepButton,
            agent.speedSlider,
        ):
            w.setFocusPolicy(Qt.FocusPolicy.NoFocus)

    def show_game(self, recorder: GameRecorder, *, best: int, info: str) -> None:
        """SCORE, BEST (``best``), the moves, the game's line (``info``) and Take back for ``recorder``."""
        rules = recorder.rules
        self.score_box.value.setText(str(recorder.score))
        self.best_box.value.setText(str(best))
        self.best_box.setToolTip(
            f"Your best score on {rules.rows}x{rules.cols}: the games you played in, with or without "
            "an agent's help"
        )
        self.movesLabel.setText(f"Moves: {recorder.moves}")
        self.gameInfoLabel.setText(info)
        self.takeBackButton.setEnabled(recorder.can_take_back)
