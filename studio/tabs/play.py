"""The Play tab: a person plays (arrows / WASD), asks an agent for a hint, or watches it play on.

The game is recorded move by move, shared with an agent or not, taken back, and gone on with at the
next start by :mod:`studio.services.play` (which also keeps BEST). The tab's parts: the side panel's
widgets (:mod:`studio.tabs.play_panel`), the agent picker (:mod:`studio.tabs.play_agents`), the
coach's badge (:mod:`studio.tabs.play_coach`) and the New game dialog (:mod:`studio.tabs.play_rules`);
the tab itself wires them to the board, the store and the thinking threads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QSizePolicy, QWidget

from agents.spec import AgentSpec
from engine import Direction, Rules
from studio.services.play import HUMAN, Player, PlayRecords, agent_player, game_info
from studio.tabs.play_agents import AGENT_KEY, CHECKPOINT_ITEM, CHECKPOINT_KEY, AgentPicker, preferred_agents
from studio.tabs.play_coach import ARROWS, GRADE_COLOURS, coach_text
from studio.tabs.play_panel import MAX_SPEED, PlaySidePanel
from studio.tabs.play_rules import NewGameDialog, save_rules, saved_rules
from studio.theme import load_theme
from studio.thinking import GradeResult, Thinker, ThinkResult
from studio.widgets.board import BoardWidget

if TYPE_CHECKING:
    from engine.store import GameRecorder, GameStore

log = logging.getLogger(__name__)

#: The settings key naming the game to go on with at the next start: ``ID@DATABASE`` (``@DATABASE``: none).
RESUME_KEY = "play/resume"

# Names other modules and tests import from here (their classes live in the tab's parts).
__all__ = [
    "AGENT_KEY",
    "ARROWS",
    "CHECKPOINT_ITEM",
    "CHECKPOINT_KEY",
    "GRADE_COLOURS",
    "MAX_SPEED",
    "RESUME_KEY",
    "AgentPicker",
    "NewGameDialog",
    "PlayTab",
    "coach_text",
    "preferred_agents",
]


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
        self.records = PlayRecords(store)
        self.settings = settings
        self.thinker = thinker or Thinker(self)
        self.thinker.resultReady.connect(self._on_think_result)
        # The live coach thinks on a thread of its own: a hint asked for after a move never cancels it.
        self.coach = Thinker(self, reviewers=getattr(self.thinker, "reviewers", None))
        self.coach.gradeReady.connect(self._on_grade)
        self.last_grade: GradeResult | None = None
        self.recorder: GameRecorder | None = None
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
            self.new_game(saved_rules(self.settings))

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.board = BoardWidget(self, hint_margin=True)
        self.board.moveRequested.connect(self._on_key_move)
        self.board.newGameRequested.connect(lambda: self.new_game(self.rules))
        self.panel = side = PlaySidePanel(self.settings, self, networks=self._networks)
        # The panel's widgets under the names the window, the menus and the tests know them by.
        self.score_box, self.best_box = side.score_box, side.best_box
        self.scoreLabel, self.bestLabel = side.score_box.value, side.best_box.value
        self.movesLabel, self.gameInfoLabel, self.coachBadge = (
            side.movesLabel,
            side.gameInfoLabel,
            side.coachBadge,
        )
        self.newGameButton, self.takeBackButton = side.newGameButton, side.takeBackButton
        self.agentBox = box = side.agentBox
        self.agentCombo, self.hintButton, self.autoHintCheck = (
            box.agentCombo,
            box.hintButton,
            box.autoHintCheck,
        )
        self.coachCheck, self.hintLabels, self.hintStatus = box.coachCheck, box.hintLabels, box.hintStatus
        self.autoplayButton, self.stepButton = box.autoplayButton, box.stepButton
        self.speedSlider, self.speedLabel = box.speedSlider, box.speedLabel
        self.newGameButton.clicked.connect(self.show_new_game_dialog)
        self.takeBackButton.clicked.connect(self.take_back)
        self.agentCombo.chosen.connect(self._on_agent_chosen)
        self.hintButton.clicked.connect(self.request_hint)
        self.coachCheck.toggled.connect(self._on_coach_toggled)
        self.autoplayButton.toggled.connect(self._on_autoplay_toggled)
        self.stepButton.clicked.connect(self.step_agent)
        self.speedSlider.valueChanged.connect(self._on_speed)
        self._on_speed(self.speedSlider.value())
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(self.board, 1)
        layout.addWidget(side, 0, Qt.AlignmentFlag.AlignTop)
        side.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)

    def _networks(self) -> list[Any]:
        """The store's trained n-tuple networks the agent box offers (strongest first)."""
        from studio.services.review import play_networks

        return play_networks(self.store)

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
        self._show_game(self.records.new_game(rules, seed))
        self.status.emit(f"New {rules.rows}x{rules.cols} game")
        self._after_start()

    def resume_last_game(self) -> bool:
        """Go on with the game left unfinished last time (window closed, app killed): its board, score,
        moves and record, whose next moves append to it. False when there is none to go on with."""
        recorder = self.records.resume(self.settings.value(RESUME_KEY, None))
        if recorder is None:
            return False
        self._show_game(recorder)
        self._remember(recorder)
        message = (
            f"Resumed game #{recorder.game_id}: {recorder.moves:,} move{'s' * (recorder.moves != 1)}, "
            f"score {recorder.score:,} · New game (Ctrl+N) starts another"
        )
        # Said once the window listens (this runs while the tab is built, before it is wired).
        QTimer.singleShot(0, self, lambda text=message: self.status.emit(text))
        self._after_start()
        return True

    def _remember(self, recorder: GameRecorder | None) -> None:
        """Name the game to go on with at the next start (None: nothing), written at once (a crash keeps it)."""
        value = self.records.resume_token(recorder)
        if self.settings.value(RESUME_KEY, None) != value:
            self.settings.setValue(RESUME_KEY, value)
            self.settings.sync()

    def _show_game(self, recorder: GameRecorder) -> None:
        """Make ``recorder`` the game on the board."""
        self.recorder = recorder
        self._resumed = recorder.moves > 0  # only a resumed game has moves before its first key press
        self._takebacks = self.records.takeback_count(recorder)
        self._reached_2048 = int(recorder.board.max()) >= 2048
        save_rules(self.settings, recorder.rules)
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
        self.records.forget_best(recorder.rules)  # BEST may have counted the move's score live
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
        info = game_info(s, resumed=self._resumed, taken_back=self._takebacks)
        self.panel.show_game(s, best=self.records.best_with(s), info=info)

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
            self.play_move(result.choice, agent_player(result.agent_name, checkpoint))
            if result.values is not None:
                # "Why this move": the values of the position it was played from (no arrow: it is done).
                self._show_values(result, arrow=False, legal=legal)
        if self.autoplayButton.isChecked() and not self._watch_timer.isActive():
            # Also after a hint asked for mid-watch, which took the watch's turn: carry on watching.
            delay = self.agentBox.watch_delay_ms() - (int(result.seconds * 1000) if purpose == "watch" else 0)
            self._watch_timer.start(max(0, delay))

    def _show_values(self, result: ThinkResult, *, arrow: bool, legal: Any = None) -> None:
        """Fill the hint table (legal moves only, see :meth:`AgentBox.show_hint`); maybe the arrow."""
        self.last_hint = result
        mask = legal if legal is not None else self.recorder.game.legal_mask() if self.recorder else None
        best, no_preference = self.agentBox.show_hint(result, arrow=arrow, mask=mask)
        # No arrow for a fake preference: when every move is worth the same, none is pointed at.
        self.board.set_hint(result.choice if arrow and not no_preference else None)
        self.hint_best = best

    def _clear_hint(self) -> None:
        self.last_hint = None
        self.hint_best = None
        self.agentBox.clear_hint()
        self.board.set_hint(None)

    def _set_hint_status(self, text: str, *, fault: bool = False) -> None:
        """The line under the hint table; an agent's fault in red (it stays until the next answer)."""
        self.agentBox.set_hint_status(text, fault=fault)

    # ------------------------------------------------------------------ coach
    @property
    def coach_reviewer(self) -> Any:
        """Who grades: the default reviewer for this game's rules (see :meth:`PlayRecords.coach_reviewer`)."""
        return self.records.coach_reviewer(self.recorder.game.rules if self.recorder is not None else None)

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
        self.coachBadge.show_thinking()

    def _on_grade(self, result: GradeResult) -> None:
        s = self.recorder
        if not self.coachCheck.isChecked() or s is None or result.index != s.moves - 1:
            return  # about a move that is not the last one any more
        self.last_grade = result
        self.coachBadge.show_grade(result)

    def _clear_coach(self) -> None:
        self.coach.cancel()
        self.last_grade = None
        self.coachBadge.reset()

    # ------------------------------------------------------------------ watch
    def _on_speed(self, value: int) -> None:
        self.settings.setValue("play/speed", value)
        self._apply_animation_speed()

    def _apply_animation_speed(self) -> None:
        # Watching fast: shorter animations (none at "max") so that the board keeps up with the agent.
        if self.autoplayButton.isChecked():
            delay = self.agentBox.watch_delay_ms()
            self.board.animation_ms = min(110, int(0.8 * delay)) if delay else 0
        else:
            self.board.animation_ms = 110

    def _on_autoplay_toggled(self, on: bool) -> None:
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
