"""The Play tab: a person plays (arrows / WASD), asks an agent for a hint, or watches it play on.

Moves go through :class:`engine.store.GameRecorder`, which stores each one before the board even starts
animating. A game the person shares with an agent (Watch, Step, a key press takes over) stays one record,
each move stored with who made it (see :mod:`engine.store.recorder`).

Like the web game, the tab opens on the game you left: the last unfinished game (the window closed,
the app killed) goes on where it stopped, as the same record (:meth:`GameRecorder.resume`). Which
game that is the settings say (``play/resume``: the game, or nothing after New game or game over);
a profile that has never said falls back to your latest unfinished game in the store.

BEST is your best score on this board size: the games you played in, with or without an agent's help
(an agent watched on your game raises it live, move by move, as it passes it).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from agents.hints import hint_texts
from agents.review import BEST, BLUNDER, FORCED, GOOD, INACCURACY, MISTAKE, MoveGrade
from agents.spec import AgentSpec
from engine import DIRECTIONS, Direction, Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player
from engine.store.recorder import takebacks
from studio.settings import get_bool, get_float, get_int, get_str_list
from studio.theme import load_theme
from studio.thinking import GradeResult, Thinker, ThinkResult
from studio.widgets.board import BoardWidget

log = logging.getLogger(__name__)

ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}
MAX_SPEED = 60  # the slider's top notch means "as fast as the agent thinks"
#: The settings key naming the game to go on with at the next start: ``ID@DATABASE`` (``@DATABASE``: none).
RESUME_KEY = "play/resume"
CHECKPOINT_ITEM = "Checkpoint file…"
#: The settings keys of the agent box's last choice: a registered agent's name (or a checkpoint's agent),
#: and the checkpoint file ("" for a registered agent).
AGENT_KEY = "play/agent"
CHECKPOINT_KEY = "play/agent_checkpoint"
#: The coach badge's colour for each grade.
GRADE_COLOURS = {
    FORCED: "#8a8178",
    BEST: "#2e7d32",
    GOOD: "#689f38",
    INACCURACY: "#c49000",
    MISTAKE: "#e67e22",
    BLUNDER: "#c0392b",
}


def coach_text(grade: MoveGrade, points: bool) -> str:
    """The coach badge's line: the grade, and the better move when it was not the best one, e.g.
    ``mistake · ← left was better (−1,240 pts)`` (``points``: the losses are expected points)."""
    if grade.grade in (BEST, FORCED):
        return "best" if grade.grade == BEST else "forced · the only move"
    # A figure is joined by no-break spaces: the narrow badge wrapped "(15 % worse)" before "worse)".
    nb = "\N{NO-BREAK SPACE}"
    if points:
        cost = f"−{grade.loss:,.0f}{nb}pts"
    else:
        cost = f"<1{nb}%{nb}worse" if grade.relative < 0.005 else f"{grade.relative * 100:.0f}{nb}%{nb}worse"
    if grade.risky and grade.grade == BLUNDER:
        cost += ", this move may end the game"
    return f"{grade.grade} · {ARROWS[grade.best]} {grade.best.label} was better ({cost})"


def preferred_agents(names: list[str]) -> list[str]:
    """Registered agents, strongest-looking first (the default hint should be a good one)."""
    order = ["expectimax", "greedy"]
    return [n for n in order if n in names] + [n for n in names if n not in order]


class NewGameDialog(QDialog):
    """Rules of the next game: rows, cols, probability of a 4, start tiles, tiles per spawn, seed."""

    def __init__(self, rules: Rules, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("newGameDialog")
        self.setWindowTitle("New game")
        form = QFormLayout()
        self.rows = QSpinBox(minimum=1, maximum=16, value=rules.rows)
        self.cols = QSpinBox(minimum=1, maximum=16, value=rules.cols)
        self.p4 = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=rules.p4)
        self.start_tiles = QSpinBox(minimum=0, maximum=256, value=rules.start_tiles)
        self.spawn = QSpinBox(minimum=0, maximum=255, value=rules.spawn_per_move)
        self.seed = QLineEdit()
        self.seed.setPlaceholderText("random")
        self.rows.setObjectName("rowsSpin")
        self.cols.setObjectName("colsSpin")
        self.p4.setObjectName("p4Spin")
        self.start_tiles.setObjectName("startTilesSpin")
        self.spawn.setObjectName("spawnSpin")
        self.seed.setObjectName("seedEdit")
        form.addRow("Rows", self.rows)
        form.addRow("Columns", self.cols)
        form.addRow("Probability of a 4", self.p4)
        form.addRow("Start tiles", self.start_tiles)
        form.addRow("Tiles per spawn", self.spawn)
        form.addRow("Seed", self.seed)
        self.error = QLabel()
        self.error.setObjectName("newGameError")
        self.error.setStyleSheet("color: #c0392b;")
        self.error.setWordWrap(True)
        self.error.hide()
        self.classicButton = classic = QPushButton("Classic 4x4")
        classic.setObjectName("classicButton")
        classic.clicked.connect(self._classic)
        # Greyed while the fields already hold the classic rules: a click that changes nothing is not offered.
        for spin in (self.rows, self.cols, self.p4, self.start_tiles, self.spawn):
            spin.valueChanged.connect(self._update_classic)
        self._update_classic()
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.addButton(classic, QDialogButtonBox.ButtonRole.ResetRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def _update_classic(self) -> None:
        r = Rules()
        now = (
            self.rows.value(),
            self.cols.value(),
            self.p4.value(),
            self.start_tiles.value(),
            self.spawn.value(),
        )
        self.classicButton.setEnabled(now != (r.rows, r.cols, r.p4, r.start_tiles, r.spawn_per_move))

    def _classic(self) -> None:
        r = Rules()
        self.rows.setValue(r.rows)
        self.cols.setValue(r.cols)
        self.p4.setValue(r.p4)
        self.start_tiles.setValue(r.start_tiles)
        self.spawn.setValue(r.spawn_per_move)

    def values(self) -> tuple[Rules, int | None]:
        """The chosen rules and seed; ValueError (from Rules) with the reason when they are not valid."""
        rules = Rules(
            rows=self.rows.value(),
            cols=self.cols.value(),
            p4=round(self.p4.value(), 4),
            start_tiles=self.start_tiles.value(),
            spawn_per_move=self.spawn.value(),
        )
        text = self.seed.text().strip()
        if text and not text.lstrip("-").isdigit():
            raise ValueError(f"the seed must be a whole number (or empty for a random game), got {text!r}")
        return rules, int(text) if text else None

    def accept(self) -> None:
        try:
            self.values()
        except ValueError as e:
            self.error.setText(str(e))
            self.error.show()
            return
        super().accept()


class _ScoreBox(QFrame):
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


class AgentPicker(QComboBox):
    """Which agent gives hints and plays when you watch: registered agents (the useful ones first),
    the checkpoints used lately, and "Checkpoint file…" to pick another. ``spec`` is the choice;
    ``chosen`` fires when the user makes one (the last choice is remembered in the settings)."""

    chosen = Signal()

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        from agents.registry import agent_names

        super().__init__(parent)
        self.settings = settings
        self.setObjectName("agentCombo")
        self.setToolTip("Which agent gives hints and plays when you watch")
        for name in preferred_agents(agent_names()):
            self.addItem(name, AgentSpec(name))
        for path in self._recent_checkpoints():
            self.addItem(f"{Path(path).name} (checkpoint)", AgentSpec.from_checkpoint(path))
        self.addItem(CHECKPOINT_ITEM, None)
        self._index = 0
        self._restore_choice()
        self.activated.connect(self._on_activated)

    @property
    def spec(self) -> AgentSpec | None:
        data = self.currentData()
        return data if isinstance(data, AgentSpec) else None

    def _recent_checkpoints(self) -> list[str]:
        return [p for p in get_str_list(self.settings, "play/checkpoints") if Path(p).exists()][:5]

    def select(self, spec: AgentSpec, *, remember: bool = True) -> None:
        """Choose ``spec``, adding it to the list (before "Checkpoint file…") if it is new; the choice
        is the one the next start comes back to (``remember``)."""
        for i in range(self.count()):
            data = self.itemData(i)
            same_file = (
                spec.checkpoint is not None
                and isinstance(data, AgentSpec)
                and data.checkpoint == spec.checkpoint
            )
            if data == spec or same_file:
                if same_file and spec.name:  # the file's agent became known (Use in Play names it)
                    self.setItemData(i, spec)
                self.setCurrentIndex(i)
                self._index = i
                break
        else:
            label = spec.display if spec.checkpoint is None else f"{Path(spec.checkpoint).name} (checkpoint)"
            self.insertItem(self.count() - 1, label, spec)
            self.setCurrentIndex(self.count() - 2)
            self._index = self.currentIndex()
        if remember:
            self._remember(self._index)

    def _remember(self, index: int) -> None:
        """Keep the choice at ``index`` for the next start: a registered agent by its name, a checkpoint
        by its file (its label, the file's name only, is not unique: every run has a ``best.npz``)."""
        spec = self.itemData(index)
        if not isinstance(spec, AgentSpec):
            return
        self.settings.setValue(CHECKPOINT_KEY, spec.checkpoint or "")
        self.settings.setValue(AGENT_KEY, (spec.name or "") if spec.checkpoint else self.itemText(index))

    def _restore_choice(self) -> None:
        """Come back to the choice remembered by :meth:`_remember` (the first agent when it is gone)."""
        name = str(self.settings.value(AGENT_KEY, "") or "")
        checkpoint = str(self.settings.value(CHECKPOINT_KEY, "") or "")
        if checkpoint:
            # A file that is gone falls back to the first agent, not to an untrained one of its kind.
            if Path(checkpoint).is_file():
                self.select(AgentSpec.from_checkpoint(checkpoint, name or None), remember=False)
            return
        idx = self.findText(name) if name else -1
        self.setCurrentIndex(max(0, idx))
        self._index = self.currentIndex()

    def use_checkpoint(self, path: Path, agent: str | None = None) -> None:
        """Choose the agent saved in ``path`` and remember it among the recent checkpoints."""
        self.settings.setValue("play/checkpoint_dir", str(path.parent))
        recent = [str(path), *[p for p in self._recent_checkpoints() if p != str(path)]][:5]
        self.settings.setValue("play/checkpoints", recent)
        self.select(AgentSpec.from_checkpoint(path, agent))

    def _on_activated(self, index: int) -> None:
        if self.itemData(index) is None:  # "Checkpoint file…"
            path, _ = QFileDialog.getOpenFileName(
                self,
                "Choose a checkpoint",
                str(self.settings.value("play/checkpoint_dir", "")),
                "Checkpoints (*.npz)",
            )
            if not path:
                self.setCurrentIndex(self._index)
                return
            self.use_checkpoint(Path(path))
        else:
            self._index = index
            self._remember(index)
        self.chosen.emit()


class PlayTab(QWidget):
    """Human play with hint and watch. Signals tell the window about records and status lines."""

    status = Signal(str)
    gamesChanged = Signal()  # a record was created, extended or closed

    def __init__(
        self,
        store: GameStore,
        settings: QSettings,
        parent: QWidget | None = None,
        *,
        thinker: Thinker | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("playTab")
        # The classic game's warm page behind the board (the other tabs keep the platform look).
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(f"#playTab {{ background: {load_theme().window}; }}")
        self.store = store
        self.settings = settings
        self.thinker = thinker or Thinker(self)
        self.thinker.resultReady.connect(self._on_think_result)
        # The live coach thinks on a thread of its own: a hint asked for after a move never cancels it.
        self.coach = Thinker(self, reviewers=getattr(self.thinker, "reviewers", None))
        self.coach.gradeReady.connect(self._on_grade)
        self.last_grade: GradeResult | None = None
        self.recorder: GameRecorder | None = None
        self._best: dict[tuple[int, int], int] = {}
        self._pending: str | None = None  # "hint" / "watch" / "step": what the in-flight ticket is for
        self._ticket = 0
        self._reached_2048 = False
        self._resumed = False
        self._takebacks = 0  # moves taken back in the game shown (the record keeps the count)
        self.last_hint: ThinkResult | None = None
        self.hint_best: Direction | None = None  # the best move of the hint shown (None: no preference)
        self._watch_timer = QTimer(self)
        self._watch_timer.setSingleShot(True)
        self._watch_timer.timeout.connect(self._watch_tick)
        self._build()
        if not self.resume_last_game():
            self.new_game(self._saved_rules())

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        theme = load_theme()
        self.board = BoardWidget(self, hint_margin=True)
        self.board.moveRequested.connect(self._on_key_move)
        self.board.newGameRequested.connect(lambda: self.new_game(self.rules))

        side = QWidget(self)
        side.setObjectName("playSidePanel")
        side.setFixedWidth(270)
        col = QVBoxLayout(side)
        col.setContentsMargins(6, 0, 0, 0)

        title = QLabel("2048")
        title.setStyleSheet(f"color: {theme.text_dark}; font-size: 44px; font-weight: bold;")
        boxes = QHBoxLayout()
        self.score_box = _ScoreBox("SCORE", "scoreLabel")
        self.best_box = _ScoreBox("BEST", "bestLabel")
        self.scoreLabel = self.score_box.value
        self.bestLabel = self.best_box.value
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
        self.newGameButton.clicked.connect(self.show_new_game_dialog)
        self.takeBackButton = QPushButton("Take back")
        self.takeBackButton.setObjectName("takeBackButton")
        self.takeBackButton.setToolTip(
            "Take back the last move: the board, score and next tile as before it (Ctrl+Z)"
        )
        self.takeBackButton.clicked.connect(self.take_back)
        col.addLayout(head)
        col.addLayout(boxes)
        self.coachBadge = QLabel()
        self.coachBadge.setObjectName("coachBadge")
        self.coachBadge.setWordWrap(True)
        self.coachBadge.hide()
        col.addWidget(self.coachBadge)
        col.addWidget(self.movesLabel)
        col.addWidget(self.gameInfoLabel)
        game_row = QHBoxLayout()
        game_row.addWidget(self.newGameButton)
        game_row.addWidget(self.takeBackButton)
        col.addLayout(game_row)

        col.addWidget(self._build_agent_box())

        keys = QLabel("Arrows or WASD move. Any move of yours takes over from a watched agent.")
        keys.setWordWrap(True)
        keys.setStyleSheet("color: #8a8178;")
        col.addWidget(keys)
        col.addStretch(1)
        # The board keeps the keyboard: clicking Hint or the speed slider must not steal the arrows.
        for w in (
            self.newGameButton,
            self.takeBackButton,
            self.hintButton,
            self.autoHintCheck,
            self.coachCheck,
            self.autoplayButton,
            self.stepButton,
            self.speedSlider,
        ):
            w.setFocusPolicy(Qt.FocusPolicy.NoFocus)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(self.board, 1)
        layout.addWidget(side, 0, Qt.AlignmentFlag.AlignTop)
        side.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)

    def _build_agent_box(self) -> QGroupBox:
        """The agent panel: which agent, its hint (a value per move), Watch / Step and the speed."""
        agent_box = QGroupBox("Agent")
        grid = QVBoxLayout(agent_box)
        self.agentCombo = AgentPicker(self.settings)
        self.agentCombo.chosen.connect(self._on_agent_chosen)
        grid.addWidget(self.agentCombo)
        hint_row = QHBoxLayout()
        self.hintButton = QPushButton("Hint")
        self.hintButton.setObjectName("hintButton")
        self.hintButton.setToolTip("Ask the agent to rate each legal move (H)")
        self.hintButton.clicked.connect(self.request_hint)
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
        self.coachCheck.setChecked(get_bool(self.settings, "play/coach", False))
        self.coachCheck.toggled.connect(self._on_coach_toggled)
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

        watch_row = QHBoxLayout()
        self.autoplayButton = QPushButton("▶ Watch")
        self.autoplayButton.setObjectName("autoplayButton")
        self.autoplayButton.setCheckable(True)
        self.autoplayButton.setToolTip(
            "Let the agent play this game on; press any arrow to take over (Space)"
        )
        self.autoplayButton.toggled.connect(self._on_autoplay_toggled)
        self.stepButton = QPushButton("Step")
        self.stepButton.setObjectName("stepButton")
        self.stepButton.setToolTip("The agent makes one move (.)")
        self.stepButton.clicked.connect(self.step_agent)
        watch_row.addWidget(self.autoplayButton)
        watch_row.addWidget(self.stepButton)
        grid.addLayout(watch_row)
        speed_row = QHBoxLayout()
        self.speedSlider = QSlider(Qt.Orientation.Horizontal)
        self.speedSlider.setObjectName("speedSlider")
        self.speedSlider.setRange(1, MAX_SPEED)
        self.speedSlider.setValue(get_int(self.settings, "play/speed", 5))
        self.speedSlider.valueChanged.connect(self._on_speed)
        self.speedLabel = QLabel()
        self.speedLabel.setMinimumWidth(70)
        speed_row.addWidget(QLabel("Speed"))
        speed_row.addWidget(self.speedSlider, 1)
        speed_row.addWidget(self.speedLabel)
        grid.addLayout(speed_row)
        self._on_speed(self.speedSlider.value())
        return agent_box

    # ------------------------------------------------------------------ state
    @property
    def rules(self) -> Rules:
        return self.recorder.rules if self.recorder is not None else Rules()

    @property
    def agent_spec(self) -> AgentSpec | None:
        return self.agentCombo.spec

    def set_agent(self, spec: AgentSpec) -> None:
        """Choose the hint / watch agent (registered name or checkpoint), adding it to the list if new."""
        self.agentCombo.select(spec)

    def _saved_rules(self) -> Rules:
        try:
            return Rules(
                rows=get_int(self.settings, "play/rows", 4),
                cols=get_int(self.settings, "play/cols", 4),
                p4=get_float(self.settings, "play/p4", 0.1),
                start_tiles=get_int(self.settings, "play/start_tiles", 2),
                spawn_per_move=get_int(self.settings, "play/spawn_per_move", 1),
            )
        except (TypeError, ValueError):  # hand-edited settings: fall back to the classic game
            return Rules()

    def _best_for(self, rules: Rules) -> int:
        """BEST of this board size: the top score of the games the person played in (agents may have
        helped: the mixed ones count, as the game in progress does while an agent plays it on)."""
        key = rules.shape
        if key not in self._best:
            best = 0
            try:
                for g in self.store.list_games(played_by="human"):
                    g_rules = getattr(g, "rules", None)
                    if g_rules is None or tuple(getattr(g_rules, "shape", key)) == key:
                        best = max(best, int(getattr(g, "score", 0)))
            except Exception:  # a damaged store must not stop play: best starts from 0
                log.warning("cannot read the best score from the store", exc_info=True)
                best = 0
            self._best[key] = best
        return self._best[key]

    # ------------------------------------------------------------------ games
    def new_game(self, rules: Rules | None = None, seed: int | None = None) -> None:
        """Abandon the current game (its record says so) and start another; ``rules`` default to the last."""
        rules = rules or self.rules
        self.stop_watching()
        self.thinker.cancel()
        self._clear_coach()
        self._pending = None
        if self.recorder is not None and not self.recorder.closed:
            had_record = self.recorder.game_id is not None
            self.recorder.close("abandoned")
            if had_record:
                self.gamesChanged.emit()
        self._remember(None)  # the new game has no record until its first move
        self._show_game(GameRecorder(self.store, rules=rules, seed=seed, lazy=True))
        self.status.emit(f"New {rules.rows}x{rules.cols} game")
        self._after_start()

    def resume_last_game(self) -> bool:
        """Go on with the game left unfinished last time (window closed, app killed): its board, score,
        moves and record, whose next moves append to it. False when there is none to go on with."""
        for game_id in self._resume_candidates():
            try:
                recorder = GameRecorder.resume(self.store, game_id)
            except ValueError:  # StoreError: gone, over, played elsewhere, or it does not replay
                continue
            self._show_game(recorder)
            self._remember(recorder)
            message = (
                f"Resumed game #{game_id}: {recorder.moves:,} move{'s' * (recorder.moves != 1)}, "
                f"score {recorder.score:,} · New game (Ctrl+N) starts another"
            )
            # Said once the window listens (this runs while the tab is built, before it is wired).
            QTimer.singleShot(0, self, lambda text=message: self.status.emit(text))
            self._after_start()
            return True
        return False

    def _resume_candidates(self) -> list[int]:
        """The game to go on with: the one the settings name ("": none), else, for a profile that never
        said about this store, the person's latest unfinished game of their own (not imported)."""
        saved = self.settings.value(RESUME_KEY, None)
        game_id, _, where = str(saved or "").partition("@")
        if saved is not None and where == str(getattr(self.store, "path", "")):
            return [int(game_id)] if game_id.isdigit() else []
        try:
            games = self.store.list_games(played_by="human", status="abandoned", limit=50)
        except Exception:  # a damaged store must not stop play: a new game
            log.warning("cannot look for an unfinished game to resume", exc_info=True)
            return []
        own = [g for g in games if g.origin is None and g.run_id is None and g.n_moves and g.seed is not None]
        own.sort(key=lambda g: g.ended or g.started, reverse=True)
        return [g.id for g in own[:3]]

    def _remember(self, recorder: GameRecorder | None) -> None:
        """Name the game to go on with at the next start (None: nothing), written at once (a crash keeps it)."""
        game_id = recorder.game_id if recorder is not None and not recorder.closed else None
        value = f"{game_id or ''}@{getattr(self.store, 'path', '')}"
        if self.settings.value(RESUME_KEY, None) != value:
            self.settings.setValue(RESUME_KEY, value)
            self.settings.sync()

    def _show_game(self, recorder: GameRecorder) -> None:
        """Make ``recorder`` the game on the board."""
        self.recorder = recorder
        self._resumed = recorder.moves > 0  # only a resumed game has moves before its first key press
        self._takebacks = 0
        if recorder.game_id is not None:
            try:
                self._takebacks = len(takebacks(self.store, recorder.game_id))
            except ValueError:  # StoreError: the count is informative only
                log.warning("cannot read the takebacks of game %s", recorder.game_id, exc_info=True)
        rules = recorder.rules
        self._reached_2048 = int(recorder.board.max()) >= 2048
        for key, value in (
            ("rows", rules.rows),
            ("cols", rules.cols),
            ("p4", rules.p4),
            ("start_tiles", rules.start_tiles),
            ("spawn_per_move", rules.spawn_per_move),
        ):
            self.settings.setValue(f"play/{key}", value)
        self.board.hide_overlay()
        # The start tiles are not "new": only a tile spawned by a move is marked.
        self.board.set_board(recorder.board)
        self._clear_hint()
        self._update_labels()
        self.board.setFocus()

    def _after_start(self) -> None:
        assert self.recorder is not None
        if self.recorder.game_over:  # e.g. no start tiles and no spawns: nothing can ever move
            self.board.show_overlay("No move possible", "These rules give a board without a legal move")
        elif self.autoHintCheck.isChecked():
            self.request_hint()

    def show_new_game_dialog(self) -> bool:
        dialog = NewGameDialog(self.rules, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return False
        rules, seed = dialog.values()
        self.new_game(rules, seed)
        return True

    def mark_dirty(self) -> None:
        """Nothing to re-read: the Play tab shows its own game only."""

    def shutdown(self) -> None:
        """The window is closing: end the game's record and let the thinking thread finish."""
        self.close_game()
        self.thinker.shutdown()
        self.coach.shutdown()

    def close_game(self) -> None:
        """The window is closing: stop the agent and end the record as abandoned (nothing else to save)."""
        self.stop_watching()
        self.thinker.cancel()
        self.coach.cancel()
        if self.recorder is not None:
            self.recorder.close("abandoned")

    def play_move(self, direction: Direction, player: Player = HUMAN) -> bool:
        """Make one move (logged at once) and animate it; False when it is illegal."""
        recorder = self.recorder
        if recorder is None:
            return False
        before = recorder.board
        position = recorder.game.copy()  # what the coach grades: the position before the move
        try:
            result = recorder.play(direction, player)
        except ValueError as e:  # StoreError: the move could not be saved, so it was not made
            self.status.emit(f"Move not made, the store refused it: {e}")
            self.stop_watching()
            return False
        if result is None:
            return False
        self.thinker.cancel()  # any answer in flight is about the old board
        if self._pending in ("hint", "step"):
            self._pending = None
        self.board.push_transition(before, direction, recorder.board, result.spawns)
        self._clear_hint()
        if player.is_human and self.coachCheck.isChecked():
            self._ask_coach(position, Direction(direction))
        else:
            self._clear_coach()
        self._update_labels()
        self.gamesChanged.emit()  # other tabs re-read lazily, when shown
        self._remember(recorder)  # the record exists from the first move; a game over leaves nothing
        if recorder.closed:
            self.stop_watching()
            best = int(recorder.board.max())
            self.board.show_overlay(
                "Game over!", f"Score {recorder.score} · best tile {best} · {recorder.moves} moves"
            )
            self.status.emit(f"Game over: score {recorder.score}, best tile {best}")
            return True
        if not self._reached_2048 and int(recorder.board.max()) >= 2048:
            self._reached_2048 = True
            self.status.emit("2048! Keep going: the game goes on until no move is left.")
        if self.autoHintCheck.isChecked() and not self.autoplayButton.isChecked():
            self.request_hint()
        return True

    def take_back(self) -> bool:
        """Take back the last move (Ctrl+Z, Game > Take back): the board, score and spawn generator go
        back to just before it, and the record drops it and counts it (see
        :meth:`GameRecorder.take_back`). Stops a watched agent first. False when there is nothing to
        take back."""
        recorder = self.recorder
        if recorder is None or not recorder.can_take_back:
            self.status.emit(
                "The game is over: it stays as it ended"
                if recorder and recorder.closed
                else "No move to take back"
            )
            return False
        self.stop_watching()
        self.thinker.cancel()
        self._pending = None
        self._clear_coach()
        try:
            taken = recorder.take_back()
        except ValueError as e:  # StoreError: the record keeps the move, so the game does too
            self.status.emit(f"Move not taken back, the store refused: {e}")
            return False
        if taken is None:
            return False
        self._takebacks += 1
        self._best.pop(recorder.rules.shape, None)  # BEST may have counted the move's score live
        self.board.set_board(recorder.board)
        self._clear_hint()
        self._update_labels()
        self.gamesChanged.emit()
        self.status.emit(
            f"Took back move {taken.index + 1} ({ARROWS[taken.direction]} {taken.direction.label})"
        )
        if self.autoHintCheck.isChecked():
            self.request_hint()
        return True

    def _on_key_move(self, direction: Direction) -> None:
        if self.autoplayButton.isChecked():
            self.stop_watching()
            self.status.emit("You took over from the agent")
        self.play_move(direction, HUMAN)

    def _update_labels(self) -> None:
        s = self.recorder
        assert s is not None
        best = self._best_for(s.rules)
        if HUMAN in s.players:  # the person's game: it counts whoever moves, live (see _best_for)
            best = max(best, s.score)
            self._best[s.rules.shape] = best
        self.scoreLabel.setText(str(s.score))
        self.bestLabel.setText(str(best))
        self.best_box.setToolTip(
            f"Your best score on {s.rules.rows}x{s.rules.cols}: the games you played in, with or without "
            "an agent's help"
        )
        self.movesLabel.setText(f"Moves: {s.moves}")
        r = s.rules
        extras = []
        if r.p4 != 0.1:
            extras.append(f"p4 {r.p4:g}")
        if r.spawn_per_move != 1:
            extras.append(f"{r.spawn_per_move} per spawn")
        record = f"game #{s.game_id}" if s.game_id is not None else "not logged yet"
        if self._resumed:
            record += ", resumed"
        if self._takebacks:
            record += f", {self._takebacks} taken back"
        self.gameInfoLabel.setText(" · ".join([f"{r.rows}x{r.cols}", *extras, record]))
        self.takeBackButton.setEnabled(s.can_take_back)

    # ------------------------------------------------------------------ agent
    def _on_agent_chosen(self) -> None:
        self._clear_hint()
        self.board.setFocus()

    def use_checkpoint(self, path: Path, agent: str | None = None) -> None:
        """Hint / watch with the agent saved in ``path`` (``agent``: the agent it holds, when known;
        errors show when it is first asked)."""
        self.agentCombo.use_checkpoint(path, agent)
        self._on_agent_chosen()

    def _ask(self, purpose: str, want_values: bool) -> bool:
        spec = self.agent_spec
        if spec is None or self.recorder is None or self.recorder.closed:
            return False
        self._pending = purpose
        if purpose == "hint" and self.coachCheck.isChecked():
            # One reviewer, one unit: with the coach on, the hint is its reviewer's, in points, so the
            # move hinted best is the one graded "best" (an agent of another depth or unit disagreed).
            self._ticket = self.thinker.request_review_hint(self.coach_reviewer, self.recorder.game)
            return True
        self._ticket = self.thinker.request(spec, self.recorder.game, want_values=want_values)
        return True

    def request_hint(self) -> None:
        """Ask the agent (the coach's reviewer while the coach is on) to rate the legal moves of the
        current board (off the GUI thread)."""
        if self._ask("hint", want_values=True):
            who = self.coach_reviewer.label if self.coachCheck.isChecked() else None
            who = who or (self.agent_spec.display if self.agent_spec else "")
            self._set_hint_status(f"{who} is thinking…")

    def step_agent(self) -> None:
        """The agent makes one move (from a pause or before watching)."""
        if self.autoplayButton.isChecked():
            self.stop_watching()
        self._ask("step", want_values=self.autoHintCheck.isChecked())

    def _on_think_result(self, result: ThinkResult) -> None:
        purpose = self._pending
        s = self.recorder
        if (
            result.ticket != self._ticket
            or purpose is None
            or s is None
            or result.moves_at_request != s.moves
        ):
            return  # stale: about a board that has moved on
        self._pending = None
        problem = result.problem
        if problem:
            # A broken answer (an exception, an illegal move, values that are not numbers) is never
            # acted on: said in place, and Watch stops rather than ask the same agent again and again.
            if result.values is not None:
                self._show_values(result, arrow=False)  # what it said: "n/a" where not a number
            self.board.set_hint(None)  # no arrow for a move nobody can trust
            self.hint_best = None
            self._set_hint_status(problem, fault=True)
            self.status.emit(problem)
            self.stop_watching()
            return
        if purpose == "hint":
            self._show_values(result, arrow=True)
        elif result.choice is not None:  # watch / step: the agent moves now
            checkpoint = result.spec.checkpoint
            legal = s.game.legal_mask()
            self.play_move(result.choice, Player("agent", result.agent_name, checkpoint))
            if result.values is not None:
                # "Why this move": the values of the position it was played from (no arrow: it is done).
                self._show_values(result, arrow=False, legal=legal)
        if self.autoplayButton.isChecked() and not self._watch_timer.isActive():
            # Also after a hint asked for mid-watch, which took the watch's turn: carry on watching.
            delay = self._watch_delay_ms() - (int(result.seconds * 1000) if purpose == "watch" else 0)
            self._watch_timer.start(max(0, delay))

    def _show_values(self, result: ThinkResult, *, arrow: bool, legal: Any = None) -> None:
        """Fill the hint table (legal moves only): what each move gives up against the best, in words a
        player reads (:func:`agents.hints.hint_texts`); the agent's choice in bold; maybe the arrow."""
        self.last_hint = result
        self._set_hint_status("")
        values = result.values or {}
        hints = hint_texts(values, result.value_kind, result.choice)
        mask = legal if legal is not None else self.recorder.game.legal_mask() if self.recorder else None
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
        # No arrow for a fake preference: when every move is worth the same, none is pointed at.
        self.board.set_hint(result.choice if arrow and not no_preference else None)
        self.hint_best = hints.best

    def _clear_hint(self) -> None:
        self.last_hint = None
        self.hint_best = None
        for _, label in self.hintLabels.values():
            label.setToolTip("")
        for name, label in self.hintLabels.values():
            label.setText("")
            name.setStyleSheet("")
            label.setStyleSheet("")
            name.setEnabled(True)
        self._set_hint_status("")
        self.board.set_hint(None)

    def _set_hint_status(self, text: str, *, fault: bool = False) -> None:
        """The line under the hint table; an agent's fault in red (it stays until the next answer)."""
        self.hintStatus.setText(text)
        self.hintStatus.setStyleSheet("color: #c0392b;" if fault else "color: #8a8178;")

    # ------------------------------------------------------------------ coach
    @property
    def coach_reviewer(self) -> Any:
        """Who grades: the default reviewer for this game's rules
        (:func:`studio.services.review.default_reviewer`), re-read from the store at most every few
        seconds (a reviewer prepared meanwhile takes over)."""
        from studio.services.review import default_reviewer

        rules = self.recorder.game.rules if self.recorder is not None else None
        now = time.monotonic()
        cached = getattr(self, "_coach_reviewer", None)
        if cached is None or cached[0] != rules or now - cached[1] > 10.0:
            cached = (rules, now, default_reviewer(self.store, rules))
            self._coach_reviewer = cached
        return cached[2]

    def _on_coach_toggled(self, on: bool) -> None:
        self.settings.setValue("play/coach", on)
        if not on:
            self._clear_coach()
        if self.last_hint is not None and self._pending is None:
            self.request_hint()  # the hint shown was by the other one (the agent / the coach's reviewer)
        self.board.setFocus()

    def _ask_coach(self, position: Any, played: Direction) -> None:
        """Grade ``played`` from ``position`` off the GUI thread; the badge says so meanwhile."""
        self.coach.request_grade(self.coach_reviewer, position, played)
        self.last_grade = None
        self.coachBadge.setText("coach is thinking…")
        self.coachBadge.setToolTip("")
        self.coachBadge.setStyleSheet("color: #8a8178; font-style: italic; padding: 3px 0;")
        self.coachBadge.show()

    def _on_grade(self, result: GradeResult) -> None:
        s = self.recorder
        if not self.coachCheck.isChecked() or s is None or result.index != s.moves - 1:
            return  # about a move that is not the last one any more
        self.last_grade = result
        if result.error or result.grade is None:
            self.coachBadge.setText(f"coach: {result.error or 'no verdict'}")
            self.coachBadge.setStyleSheet("color: #c0392b; padding: 3px 0;")
            self.coachBadge.show()
            return
        g = result.grade
        self.coachBadge.setText(coach_text(g, True))
        colour = GRADE_COLOURS.get(g.grade, "#8a8178")
        self.coachBadge.setStyleSheet(
            f"QLabel {{ background: {colour}; color: white; font-weight: bold; "
            "border-radius: 5px; padding: 4px 8px; }"
        )
        values = ", ".join(f"{ARROWS[d]} {v:,.6g}" for d, v in g.values.items())
        note = f"\nReviewer: {result.fallback}" if result.fallback else ""
        self.coachBadge.setToolTip(
            f"Move {result.index + 1}, {ARROWS[g.played]} {g.played.label}, graded by "
            f"{result.agent_name} ({result.seconds * 1000:.0f} ms), in expected final score "
            f"(points). Its values: {values}{note}"
        )
        self.coachBadge.show()

    def _clear_coach(self) -> None:
        self.coach.cancel()
        self.last_grade = None
        self.coachBadge.setText("")
        self.coachBadge.setToolTip("")
        self.coachBadge.hide()

    # ------------------------------------------------------------------ watch
    def _on_speed(self, value: int) -> None:
        self.speedLabel.setText("max" if value >= MAX_SPEED else f"{value} moves/s")
        self.settings.setValue("play/speed", value)
        self._apply_animation_speed()

    def _apply_animation_speed(self) -> None:
        # Watching fast: shorter animations (none at "max") so that the board keeps up with the agent.
        if self.autoplayButton.isChecked():
            delay = self._watch_delay_ms()
            self.board.animation_ms = min(110, int(0.8 * delay)) if delay else 0
        else:
            self.board.animation_ms = 110

    def _watch_delay_ms(self) -> int:
        v = self.speedSlider.value()
        return 0 if v >= MAX_SPEED else int(1000 / v)

    def _on_autoplay_toggled(self, on: bool) -> None:
        self.autoplayButton.setText("❚❚ Pause" if on else "▶ Watch")
        if on:
            if self.recorder is None or self.recorder.closed:
                self.autoplayButton.setChecked(False)
                return
            self.status.emit("Watching the agent: press an arrow to take over")
            self._watch_tick()
        else:
            self._watch_timer.stop()
            if self._pending == "watch":
                self.thinker.cancel()
                self._pending = None
        self._apply_animation_speed()

    def start_watching(self) -> None:
        self.autoplayButton.setChecked(True)

    def stop_watching(self) -> None:
        if self.autoplayButton.isChecked():
            self.autoplayButton.setChecked(False)

    @property
    def watching(self) -> bool:
        return self.autoplayButton.isChecked()

    def _watch_tick(self) -> None:
        if not self.autoplayButton.isChecked() or self._pending == "watch":
            return
        if not self._ask("watch", want_values=self.autoHintCheck.isChecked()):
            self.stop_watching()
