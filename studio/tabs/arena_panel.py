"""The Arena tab's inputs: who plays (:class:`ContestantsBox`) and how many games where
(:class:`GamesBox`). Each keeps what a person chose in the settings, so it is there after a restart."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from agents.arena import BACKENDS
from agents.ray_util import RAY_MISSING
from studio.services.arena import checkpoint_missing, contestants_from_json, contestants_to_json
from studio.tabs.common import button, spin

SPEC_ROLE = Qt.ItemDataRole.UserRole
#: The backend choice's texts, in :data:`agents.arena.BACKENDS` order.
BACKEND_TEXTS = ("Local processes", "Ray")
#: Where the backend choice is kept between sessions.
BACKEND_KEY = "arena/backend"
#: Where the contestants are kept between sessions: a JSON list of {"spec": ..., "ticked": bool}.
CONTESTANTS_KEY = "arena/contestants"
#: Where "Games each" and the seed are kept between sessions.
GAMES_KEY = "arena/games_each"
SEED_KEY = "arena/seed"


class ContestantsBox(QGroupBox):
    """The contestants: registered agents and checkpoint files, the ticked ones play. ``changed``
    when the list, its ticks or its selection change; ``checkpointChosen(path)`` when a file was
    picked in the dialog (the tab adds it and says so)."""

    changed = Signal()
    checkpointChosen = Signal(str)

    def __init__(
        self, settings: QSettings | None, start_dir: Callable[[], str], parent: QWidget | None = None
    ) -> None:
        super().__init__("Contestants", parent)
        self.settings = settings
        self._start_dir = start_dir  # called when the dialog opens: finding it may create the folder
        self._restoring = False
        bl = QVBoxLayout(self)
        self.entryList = QListWidget()
        self.entryList.setObjectName("entryList")
        self.entryList.setToolTip("Ticked entries play; untick to leave one out")
        self.entryList.setMinimumHeight(60)
        self.entryList.itemSelectionChanged.connect(self.changed.emit)
        self.entryList.itemChanged.connect(self._on_entry_changed)
        bl.addWidget(self.entryList)
        add_row = QHBoxLayout()
        self.agentPicker = QComboBox()
        self.agentPicker.setObjectName("agentPicker")
        add_row.addWidget(self.agentPicker, 1)
        self.addAgentButton = button(
            "Add", "addAgentButton", self._add_picked, "Add this agent (default settings)"
        )
        add_row.addWidget(self.addAgentButton)
        bl.addLayout(add_row)
        row2 = QHBoxLayout()
        tip = "Add a trained agent from its file"
        self.addCheckpointButton = button(
            "Add checkpoint…", "addCheckpointButton", self._add_checkpoint_dialog, tip
        )
        tip = "Remove the selected entries"
        self.removeButton = button("Remove", "removeButton", self.remove_selected, tip)
        row2.addWidget(self.addCheckpointButton)
        row2.addWidget(self.removeButton)
        bl.addLayout(row2)
        self.fill_agents()
        self._restore()

    def fill_agents(self) -> None:
        """List the registered agents in the picker, "random" chosen."""
        from agents.registry import agent_names

        self.agentPicker.clear()
        for name in agent_names():
            self.agentPicker.addItem(name, name)
        idx = self.agentPicker.findData("random")
        self.agentPicker.setCurrentIndex(max(0, idx))

    def add_spec(self, spec: Any) -> QListWidgetItem:
        """List ``spec``, ticked (one already listed is ticked again, not listed twice)."""
        for i in range(self.entryList.count()):
            item = self.entryList.item(i)
            if item.data(SPEC_ROLE) == spec:
                item.setCheckState(Qt.CheckState.Checked)
                return item
        item = QListWidgetItem(spec.display)
        item.setData(SPEC_ROLE, spec)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked)
        item.setToolTip(spec.checkpoint or f"registered agent {spec.name} with its default settings")
        self.entryList.addItem(item)
        self.changed.emit()
        self._save()
        return item

    def add_agent(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Add registered agent ``name`` (default config unless given)."""
        from agents.spec import AgentSpec

        self.add_spec(AgentSpec(name=name, config=dict(config or {})))

    def remove_selected(self) -> None:
        for item in self.entryList.selectedItems():
            self.entryList.takeItem(self.entryList.row(item))
        self.changed.emit()
        self._save()

    def contestants(self) -> list[Any]:
        """The ticked entries' AgentSpecs, in list order."""
        return [spec for spec, ticked in self._entries() if ticked]

    def set_running(self, running: bool) -> None:
        """No change to the list while its games play."""
        self.removeButton.setEnabled(not running and bool(self.entryList.selectedItems()))
        for w in (self.addAgentButton, self.addCheckpointButton, self.agentPicker, self.entryList):
            w.setEnabled(not running)

    def _entries(self) -> list[tuple[Any, bool]]:
        items = (self.entryList.item(i) for i in range(self.entryList.count()))
        return [(item.data(SPEC_ROLE), item.checkState() == Qt.CheckState.Checked) for item in items]

    def _on_entry_changed(self, _item: QListWidgetItem) -> None:
        self.changed.emit()
        self._save()

    def _add_picked(self) -> None:
        name = self.agentPicker.currentData()
        if name:
            self.add_agent(str(name))

    def _add_checkpoint_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Add a checkpoint", self._start_dir(), "Checkpoints (*.npz)"
        )
        if path:
            self.checkpointChosen.emit(path)

    def _save(self) -> None:
        """Keep the list (and which are ticked) in the settings, for the next start."""
        if self.settings is not None and not self._restoring:
            self.settings.setValue(CONTESTANTS_KEY, contestants_to_json(self._entries()))

    def _restore(self) -> None:
        """The list of the last session; a checkpoint whose file is gone stays listed, unticked, saying so."""
        if self.settings is None:
            return
        self._restoring = True
        try:
            for spec, ticked in contestants_from_json(str(self.settings.value(CONTESTANTS_KEY, "[]"))):
                item = self.add_spec(spec)
                if checkpoint_missing(spec):
                    ticked = False
                    item.setText(f"{spec.display} (file missing)")
                    item.setToolTip(f"{spec.checkpoint} is not there any more")
                item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        finally:
            self._restoring = False


class GamesBox(QGroupBox):
    """How each contestant plays: games each, the seed, processes and the backend (local processes,
    or Ray where it is installed: ``ray_available``); kept in the settings as they change."""

    def __init__(
        self, settings: QSettings | None, ray_available: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__("Games", parent)
        self.settings = settings
        self._ray_available = ray_available
        fl = QFormLayout(self)
        self.gamesSpin = spin("gamesSpin", 1, 1_000_000, 100, "Games per contestant")
        self.seedSpin = spin("seedSpin", 0, 2**31 - 1, 0, "Seed: game i gets the same spawns for every agent")
        cpus = os.cpu_count() or 1
        tip = "Processes (or Ray actors) playing in parallel"
        self.workersSpin = spin("workersSpin", 1, max(1, cpus), min(4, cpus), tip)
        self.backendCombo = QComboBox()
        self.backendCombo.setObjectName("backendCombo")
        for name, text in zip(BACKENDS, BACKEND_TEXTS):
            self.backendCombo.addItem(text, name)
        if ray_available:
            self.backendCombo.setToolTip(
                "Where the games play: processes on this machine, or Ray actors (the same games either way)"
            )
            saved = str(settings.value(BACKEND_KEY, "local")) if settings is not None else "local"
            self.backendCombo.setCurrentIndex(max(0, self.backendCombo.findData(saved)))
        else:
            # Stays on local processes (a saved "ray" from a machine with Ray is not applied here).
            self.backendCombo.setToolTip(RAY_MISSING[0].upper() + RAY_MISSING[1:])
        self.backendCombo.currentIndexChanged.connect(lambda _i: self._keep(BACKEND_KEY, self.backend()))
        fl.addRow("Games each", self.gamesSpin)
        fl.addRow("Seed", self.seedSpin)
        fl.addRow("Processes", self.workersSpin)
        fl.addRow("Backend", self.backendCombo)
        self._restore()

    def backend(self) -> str:
        """Where the next run's games play: ``"local"`` or ``"ray"``."""
        return str(self.backendCombo.currentData())

    def set_running(self, running: bool) -> None:
        """No change of settings while games play."""
        for w in (self.gamesSpin, self.seedSpin, self.workersSpin):
            w.setEnabled(not running)
        self.backendCombo.setEnabled(not running and self._ray_available)

    def _keep(self, key: str, value: int | str) -> None:
        if self.settings is not None:
            self.settings.setValue(key, value)

    def _restore(self) -> None:
        """ "Games each" and the seed of the last session (then kept as they change)."""
        if self.settings is not None:
            for box, key in ((self.gamesSpin, GAMES_KEY), (self.seedSpin, SEED_KEY)):
                try:
                    value = int(str(self.settings.value(key, box.value())))
                except ValueError:  # hand-edited settings: the default stays
                    continue
                box.setValue(max(box.minimum(), min(box.maximum(), value)))
        self.gamesSpin.valueChanged.connect(lambda v: self._keep(GAMES_KEY, int(v)))
        self.seedSpin.valueChanged.connect(lambda v: self._keep(SEED_KEY, int(v)))
