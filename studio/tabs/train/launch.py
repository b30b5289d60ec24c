"""The Train tab's launch form: what to train, how, for how long. It gathers a RunRequest, nothing else.

Agent picker, the agent's generated settings form (with its presets), the rules, a budget of any
kind (episodes, minutes and/or steps: the first reached ends the run, as on the command line),
parallel play (workers, local processes or Ray, a cluster address) and the run's seed and checkpoint
cadence. :meth:`LaunchForm.request` turns them into the same
:class:`studio.services.runs.RunRequest` that ``python main.py train`` builds from its flags, and
:meth:`LaunchForm.show_error` puts a :class:`agents.runner.RunError` next to the field it names.
The boxes are widgets of their own: :mod:`~studio.tabs.train.launch_budget`, ``launch_rules``,
``launch_parallel`` and ``launch_run`` (made from the run options' declaration,
:class:`agents.run.options.RunOptions`); ``launch_memory`` keeps what the form remembers between
sessions, ``launch_data`` counts the games imitation would learn from.

An agent that learns from the store's games (imitation) gets a line under the agent saying how many
games and moves its filters select, red below :data:`MIN_IMITATION_MOVES` ("280 moves: too few to
learn from"), and :meth:`LaunchForm.warn_if_little_data` says it again when Start is pressed.
"""

from __future__ import annotations

import html
import itertools
import logging
from pathlib import Path
from typing import Any, Unpack

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent, QStandardItemModel, QTextDocument
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from agents.base import Agent, Budget
from agents.config import ConfigError
from agents.runner import RunError
from engine import Rules
from studio.services.runs import RunRequest, preset_budget
from studio.tabs.common import NOTE_STYLE, button, error_label, label
from studio.tabs.train.launch_budget import BudgetBox, Limits
from studio.tabs.train.launch_data import count_data, data_note, small_data_warning
from studio.tabs.train.launch_memory import FormMemory
from studio.tabs.train.launch_parallel import ParallelBox
from studio.tabs.train.launch_rules import RulesBox
from studio.tabs.train.launch_run import RunBox
from studio.widgets.config_form import ConfigForm

log = logging.getLogger(__name__)

#: The agent "Train from my games" selects, and the settings it fills in.
IMITATION_AGENT = "imitation"
IMITATION_FROM_HUMANS = {"source": "human"}
#: Fewer moves than this and imitation learns next to nothing (validation accuracy near chance):
#: the form says so in red, and Start asks first.
MIN_IMITATION_MOVES = 2000
#: How long the form waits after the last change of a filter before it counts the games again.
COUNT_DELAY_MS = 250
#: Lines of the agent's description under the picker (the rest: "…", the whole in the tooltip).
DESCRIPTION_LINES = 2


class ElidedLabel(QLabel):
    """Rich text wrapped to at most ``lines`` lines of its width, the last ending in "…"; the whole
    text in the tooltip. Its height is fixed at those lines, so a longer text never moves what is
    under it."""

    def __init__(self, lines: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lines = lines
        self._full = ""
        self.setWordWrap(False)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(QFontMetrics(self.font()).lineSpacing() * lines + 2)

    def setText(self, text: str) -> None:
        self._full = text
        self.setToolTip(f"<qt>{text}</qt>" if text else "")
        self._fit()

    def full_text(self) -> str:
        return self._full

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        """Greedy word wrap of the plain text to the width; past ``lines`` lines, the last elided."""
        doc = QTextDocument()
        doc.setHtml(self._full)
        plain = doc.toPlainText()
        fm = QFontMetrics(self.font())
        width = max(40, self.width() - 4)
        wrapped: list[str] = []
        for word in plain.split():
            trial = f"{wrapped[-1]} {word}" if wrapped else word
            if wrapped and fm.horizontalAdvance(trial) <= width:
                wrapped[-1] = trial
            else:
                wrapped.append(word)
        if len(wrapped) <= self.lines:
            self.setWordWrap(True)
            super().setText(self._full)  # fits: the rich text as it is (its italics, its colour)
            return
        self.setWordWrap(False)
        last = " ".join(wrapped[self.lines - 1 :])
        shown = [*wrapped[: self.lines - 1], fm.elidedText(last, Qt.TextElideMode.ElideRight, width)]
        super().setText("<br>".join(html.escape(x, quote=False) for x in shown))


class LaunchForm(QWidget):
    """Agent, settings, rules, budget, parallel play and run options; ``request()`` -> RunRequest.

    Signals: ``agentChanged(object)`` (the agent class, or None when it cannot be loaded),
    ``changed()`` (anything that may change whether Start is possible), ``fromMyGames()`` (the
    "Train from my games" button), ``status(str)``.
    """

    agentChanged = Signal(object)
    changed = Signal()
    fromMyGames = Signal()
    status = Signal(str)

    def __init__(
        self,
        settings: QSettings | None = None,
        parent: QWidget | None = None,
        *,
        data_dir: str | Path | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("launchForm")
        self.settings = settings
        self.memory = FormMemory(settings)
        #: the store the runs train on (None: the default data dir), where imitation's games are counted
        self.data_dir = data_dir
        self.agent_cls: type[Agent] | None = None
        self.preset_name: str | None = None
        #: what the last preset put in the rules and budget boxes (to tell when they were changed)
        self._preset_extras: tuple[Any, Any] | None = None
        #: (games, moves) an imitation agent's filters select now; None: not counted / not imitation
        self.data_count: tuple[int, int] | None = None
        self._count_timer = QTimer(self)
        self._count_timer.setSingleShot(True)
        self._count_timer.setInterval(COUNT_DELAY_MS)
        self._count_timer.timeout.connect(self.refresh_data_count)
        # What a first run needs stays on screen: the agent, its preset and the budget on top; the
        # agent's knobs, the rules, parallel play and the run's options scroll below them (at the
        # window's default size the whole form is twice the panel's height). Start is the tab's,
        # under this form.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self._agent_box())
        settings_box = self._settings_box()  # builds the form, whose preset rows go on top
        layout.addWidget(self.form.presetHeader)
        layout.addWidget(self._budget_box())
        self.requestError = error_label("requestError")
        layout.addWidget(self.requestError)
        inner = QWidget()
        inner.setObjectName("launchDetails")
        details = QVBoxLayout(inner)
        details.setContentsMargins(0, 0, 4, 0)
        details.addWidget(settings_box)
        details.addWidget(self._rules_box())
        details.addWidget(self._parallel_box())
        details.addWidget(self._run_box())
        details.addStretch(1)
        self.detailsScroll = QScrollArea()
        self.detailsScroll.setObjectName("launchScroll")
        self.detailsScroll.setWidgetResizable(True)
        self.detailsScroll.setFrameShape(QScrollArea.Shape.NoFrame)
        # The fields follow the panel's width (they shrink, long labels go above them); only the
        # height scrolls.
        self.detailsScroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.detailsScroll.setWidget(inner)
        # Tab goes from field to field, not to the frame
        self.detailsScroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout.addWidget(self.detailsScroll, 1)
        # Tab follows what is shown: the preset rows, the budget, then the fields (chain_start).
        chain: list[QWidget] = [self.form.defaultsButton]
        chain += [w for _name, check, editor in self.budgetBox.rows() for w in (check, editor)]
        for a, b in itertools.pairwise(chain):
            QWidget.setTabOrder(a, b)
        self.form.chain_start = chain[-1]  # the last budget editor
        #: the agent whose settings the form holds now (they are remembered under its name)
        self._form_agent: str | None = None
        self._fill_agents()
        self.budgetBox.restore(self.memory.load("train/budget"))
        self._sync_inputs()

    # ================================================================== building
    def _agent_box(self) -> QGroupBox:
        box = QGroupBox("Agent")
        ab = QVBoxLayout(box)
        ab.setContentsMargins(6, 4, 6, 4)
        row = QHBoxLayout()
        self.agentCombo = QComboBox()
        self.agentCombo.setObjectName("agentCombo")
        self.agentCombo.setToolTip("Every agent: the built-in ones and installed plug-ins (docs/agents.md)")
        self.agentCombo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.agentCombo.setMinimumContentsLength(8)
        self.agentCombo.currentIndexChanged.connect(self._on_agent_changed)
        row.addWidget(self.agentCombo, 1)
        self.fromGamesButton = button(
            "From my games",
            "fromGamesButton",
            self.fromMyGames.emit,
            "Train from my games: imitation learning on the moves you played (the person's moves of "
            "every game)",
        )
        row.addWidget(self.fromGamesButton)
        ab.addLayout(row)
        # Two lines at most (the longest description took five, pushing the budget off screen); the
        # whole text is the tooltip.
        self.agentDescription = ElidedLabel(DESCRIPTION_LINES)
        self.agentDescription.setObjectName("agentDescription")
        self.agentDescription.setStyleSheet("color: #6b625a;")
        ab.addWidget(self.agentDescription)
        self.dataNote = label("dataNote", wrap=True, hidden=True)
        ab.addWidget(self.dataNote)
        return box

    def _settings_box(self) -> QGroupBox:
        box = QGroupBox("Settings")
        sb = QVBoxLayout(box)
        self.form = ConfigForm()
        self.form.validityChanged.connect(lambda _ok: self.changed.emit())
        self.form.presetLoaded.connect(self._apply_preset_extras)
        self.form.defaultsButton.clicked.connect(self._forget_preset)
        self.form.changed.connect(self._count_timer.start)
        self.form.extra_changes = self._preset_extra_changes
        sb.addWidget(self.form)
        self.presetNote = label("presetNote", wrap=True, style=NOTE_STYLE, hidden=True)
        self.form.add_note(self.presetNote)  # under the preset's marker, not below the whole form
        return box

    def _rules_box(self) -> RulesBox:
        self.rulesBox = box = RulesBox()
        box.edited.connect(self._check_rules)
        box.shapeEdited.connect(self._count_timer.start)  # imitation learns from games of this shape
        self.rowsSpin, self.colsSpin, self.p4Spin = box.rowsSpin, box.colsSpin, box.p4Spin
        self.startTilesSpin, self.spawnSpin, self.rulesError = (
            box.startTilesSpin,
            box.spawnSpin,
            box.rulesError,
        )
        return box

    def _budget_box(self) -> BudgetBox:
        self.budgetBox = box = BudgetBox()
        box.toggled.connect(self._sync_inputs)
        box.edited.connect(self.form.refresh_preset_marker)
        self.episodesCheck, self.episodesSpin = box.episodesCheck, box.episodesSpin
        self.minutesCheck, self.minutesSpin = box.minutesCheck, box.minutesSpin
        self.stepsCheck, self.stepsSpin, self.budgetError = box.stepsCheck, box.stepsSpin, box.budgetError
        return box

    def _parallel_box(self) -> ParallelBox:
        self.parallelBox = box = ParallelBox()
        box.backendChanged.connect(self._sync_inputs)
        self.workersSpin, self.backendCombo = box.workersSpin, box.backendCombo
        self.rayAddressEdit, self.parallelNote = box.rayAddressEdit, box.parallelNote
        return box

    def _run_box(self) -> RunBox:
        self.runBox = box = RunBox()
        self.seedSpin, self.checkpointSpin, self.keepSpin = box.seedSpin, box.checkpointSpin, box.keepSpin
        self.maxCheckpointSpin, self.logEverySpin = box.maxCheckpointSpin, box.logEverySpin
        self.evalGamesSpin, self.evalEverySpin = box.evalGamesSpin, box.evalEverySpin
        return box

    # ================================================================== agent
    def _fill_agents(self) -> None:
        from agents.registry import agent_names, broken_plugins

        self.agentCombo.blockSignals(True)
        self.agentCombo.clear()
        for name in agent_names():
            self.agentCombo.addItem(name, name)
        # A plug-in that cannot be used is shown, greyed, with why: not chosen, not silently missing.
        for name, reason in broken_plugins():
            self.agentCombo.addItem(f"{name} (cannot load)", None)
            idx = self.agentCombo.count() - 1
            self.agentCombo.setItemData(idx, reason, Qt.ItemDataRole.ToolTipRole)
            model = self.agentCombo.model()
            if isinstance(model, QStandardItemModel):  # a combo's own model: its items can be disabled
                item = model.item(idx)
                item.setEnabled(False)
        last = str(self.settings.value("train/agent", "")) if self.settings is not None else ""
        idx = self.agentCombo.findData(last) if last else -1
        if idx < 0:
            idx = self.agentCombo.findData("dqn")
        self.agentCombo.setCurrentIndex(max(0, idx))
        self.agentCombo.blockSignals(False)
        # The agent's class (and its form) is loaded when the tab is first shown: importing a learner
        # may import torch, seconds that the window's start should not wait for.

    @property
    def agent_name(self) -> str:
        return str(self.agentCombo.currentData() or "")

    def select_agent(self, name: str) -> None:
        """Choose ``name`` (KeyError when it is not registered)."""
        idx = self.agentCombo.findData(name)
        if idx < 0:
            raise KeyError(name)
        if idx == self.agentCombo.currentIndex():
            self._on_agent_changed()
        else:
            self.agentCombo.setCurrentIndex(idx)

    def ensure_loaded(self) -> None:
        """Load the current agent's form if that has not happened yet (the tab was never shown)."""
        if self.agent_cls is None and self.form.config_cls is None:
            self._on_agent_changed()

    def _on_agent_changed(self, *_: Any) -> None:
        from agents.registry import get_agent_class

        name = self.agent_name
        if not name:
            return
        self._forget_preset()
        try:
            cls = get_agent_class(name)
        except Exception as e:  # a broken agent module must not take the tab down
            log.exception("agent %s did not load", name)
            self.agent_cls = None
            self.agentDescription.setText(f"<span style='color:#c62828'>cannot load {name}: {e}</span>")
            self.agentChanged.emit(None)
            self.changed.emit()
            return
        self.agent_cls = cls
        text = cls.description or ""
        if not cls.trainable:
            text += " <i>(does not learn: use it in Play or Arena)</i>"
        self.agentDescription.setText(text)
        self._save_config()  # the agent left keeps its settings for when it is picked again
        self.form.set_config_class(cls.config_cls, agent=name)
        self._form_agent = name
        self.memory.restore_config(name, self.form)
        if self.settings is not None:
            self.settings.setValue("train/agent", name)
        self._check_rules()
        self._sync_inputs()
        self.refresh_data_count()
        self.agentChanged.emit(cls)
        self.changed.emit()

    def prefill_imitation(self, n_human_games: int) -> str:
        """ "Train from my games": the imitation agent, learning from the person's moves; what to tell
        the user (``n_human_games`` < 0: unknown). KeyError when imitation is not registered."""
        self.select_agent(IMITATION_AGENT)
        if self.agent_cls is not None:
            known = {s.name for s in self.agent_cls.config_cls.specs()}
            self.form.set_values({k: v for k, v in IMITATION_FROM_HUMANS.items() if k in known})
        self.refresh_data_count()
        if n_human_games == 0:
            return "No games of yours yet: play a few in the Play tab first."
        if n_human_games > 0:
            return f"Ready: imitation of your moves in {n_human_games} games."
        return "Ready: imitation of your moves."

    # ================================================================== what the form remembers
    def save_state(self) -> None:
        """Remember the budget and the agent's settings (QSettings), for the next time the window opens:
        they came back as "Episodes 1000" and the defaults."""
        self.memory.save("train/budget", self.budgetBox.remembered())
        self._save_config()

    def _save_config(self) -> None:
        if self._form_agent is not None and self.form.config_cls is not None:
            self.memory.save(f"train/config/{self._form_agent}", self.form.values())

    # ================================================================== the games imitation learns from
    def count_data(self) -> tuple[int, int] | None:
        """(games, moves) the imitation filters select in the store now; None when the agent is not
        imitation, or its settings or rules cannot be read yet."""
        try:
            rules = self.rules()
        except ValueError:
            return None
        return count_data(self.agent_cls, self.form.values(), rules, self.data_dir)

    def refresh_data_count(self) -> None:
        """Count the games and moves imitation would learn from, and say it under the agent."""
        self._count_timer.stop()
        self.data_count = self.count_data()
        if self.data_count is None:
            self.dataNote.hide()
            return
        text, style = data_note(*self.data_count, self.rules(), MIN_IMITATION_MOVES)
        self.dataNote.setText(text)
        self.dataNote.setStyleSheet(style)
        self.dataNote.show()

    def warn_if_little_data(self) -> str | None:
        """At Start: when imitation learns from too few moves, say so (the status bar, and the red line
        brought into view); the warning, or None. It warns and does not ask: Start starts."""
        self.refresh_data_count()
        if self.data_count is None:
            return None
        games, moves = self.data_count
        if not 0 < moves < MIN_IMITATION_MOVES:
            return None  # enough, or none at all (the run refuses with its own message)
        warning = small_data_warning(games, moves)
        scroll = self.parentWidget()
        while scroll is not None and not isinstance(scroll, QScrollArea):
            scroll = scroll.parentWidget()
        if scroll is not None:
            scroll.ensureWidgetVisible(self.dataNote)
        self.status.emit(f"training on {warning}")
        return warning

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._count_timer.start()  # games may have been played in another tab since

    # ================================================================== rules, budget
    def rules(self) -> Rules:
        """The rules of the Rules box (ValueError with the reason when they make no game)."""
        return self.rulesBox.rules()

    def set_rules(self, rules: Rules | dict[str, Any]) -> None:
        self.rulesBox.set_rules(rules)

    def rules_problem(self) -> str | None:
        try:
            rules = self.rules()
        except ValueError as e:
            return str(e)
        return self.agent_cls.unsupported_reason(rules) if self.agent_cls is not None else None

    def _check_rules(self, *_: Any) -> None:
        self.rulesBox.show_problem(self.rules_problem())
        self.form.refresh_preset_marker()
        self.changed.emit()

    def budget(self) -> Budget:
        """The ticked limits (RunError when none is ticked)."""
        return self.budgetBox.budget()

    def set_budget(self, **limits: Unpack[Limits]) -> None:
        """Tick exactly the limits given (and set their values)."""
        self.budgetBox.set_budget(**limits)
        self._sync_inputs()

    def _preset_extra_changes(self) -> list[str]:
        """What of the rules and budget the last preset set now differs (for its "modified" marker)."""
        if self._preset_extras is None:
            return []
        now = (self.rulesBox.state(), self.budgetBox.state())
        return [
            what
            for what, was, is_ in zip(("rules", "budget"), self._preset_extras, now, strict=True)
            if was != is_
        ]

    def _forget_preset(self) -> None:
        """Defaults, or another agent: no preset is applied any more."""
        self.preset_name = None
        self._preset_extras = None
        self.presetNote.hide()

    def _apply_preset_extras(self, preset: dict) -> None:
        """A preset may carry rules and a budget besides the settings: apply them too, and say so."""
        self._preset_extras = None
        self.preset_name = preset.get("name")
        if isinstance(preset.get("rules"), dict):
            try:
                self.set_rules(preset["rules"])
            except (TypeError, ValueError) as e:
                self.status.emit(f"preset rules ignored: {e}")
        else:
            self.set_rules(Rules())
        budget = preset_budget(preset)
        if budget is not None:
            self.set_budget(
                episodes=budget.episodes,
                minutes=None if budget.seconds is None else budget.seconds / 60.0,
                steps=budget.steps,
                cpu_minutes=None if budget.cpu_seconds is None else budget.cpu_seconds / 60.0,
            )
        self._preset_extras = (self.rulesBox.state(), self.budgetBox.state())
        title = preset.get("title") or preset.get("name") or "preset"
        description = str(preset.get("description", ""))
        also = [f"the rules ({self.rowsSpin.value()}×{self.colsSpin.value()})"]
        if budget is not None:
            also.append(f"the budget ({budget_words(budget)})")
        self.presetNote.setText(f"{title} also sets {' and '.join(also)}.")
        self.presetNote.setToolTip(description)
        self.presetNote.show()
        self.status.emit(f"preset applied: {title}")

    # ================================================================== the request
    def request(self) -> RunRequest:
        """The run these inputs ask for (RunError naming the field at fault; the field is marked)."""
        from agents.registry import target_of

        self.clear_errors()
        try:
            if self.agent_cls is None:
                raise RunError(f"agent {self.agent_name!r} could not be loaded", "agent")
            try:
                config = self.form.config()
            except ConfigError as e:
                raise RunError(str(e), e.field) from None
            problem = self.rules_problem()
            if problem:
                raise RunError(problem, "rules")
            return RunRequest(
                agent=self.agent_name,
                target=target_of(self.agent_name),
                preset=self.preset_name,
                config=config.to_dict(),
                rules=self.rules(),
                budget=self.budget(),
                seed=self.runBox.seed(),
                **self.parallelBox.values(),
                **self.runBox.options(),
            )
        except RunError as e:
            self.show_error(e)
            raise

    def show_error(self, error: RunError) -> None:
        """Put ``error`` where the user fixes it: the knob's field, the rules, the budget, or below."""
        field = error.field or ""
        if field in self.form.values():
            self.form.error_label(field).setText(str(error).split(": ", 1)[-1])
            self.form.error_label(field).show()
        else:
            note = {"rules": self.rulesError, "budget": self.budgetError}.get(field, self.requestError)
            note.setText(str(error))
            note.show()

    def clear_errors(self) -> None:
        for note in (self.budgetError, self.requestError):
            note.hide()
        self._check_rules()

    def is_ready(self) -> bool:
        """Whether Start can be pressed: a trainable agent, a valid form, rules it can play."""
        cls = self.agent_cls
        return bool(
            cls is not None and cls.trainable and self.form.is_valid() and self.rules_problem() is None
        )

    # ================================================================== enabled state
    def _sync_inputs(self, *_: Any) -> None:
        self.budgetBox.sync()
        self.parallelBox.sync(
            bool(self.agent_cls is not None and self.agent_cls.parallel_play), self.agent_name
        )
        self.changed.emit()


def budget_words(budget: Budget) -> str:
    """``"1,000 episodes or 5 min or 20,000 moves"``: the budget's limits ("" for none)."""
    parts = []
    if budget.episodes is not None:
        parts.append(f"{budget.episodes:,} episodes")
    if budget.seconds is not None:
        parts.append(f"{budget.seconds / 60:g} min")
    if budget.steps is not None:
        parts.append(f"{budget.steps:,} moves")
    if budget.cpu_seconds is not None:
        parts.append(f"{budget.cpu_seconds / 60:g} CPU-min")
    return " or ".join(parts)
