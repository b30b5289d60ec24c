"""The Play tab's choice of agent: which one gives hints and plays when the person watches."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QWidget

from agents.spec import AgentSpec
from studio.settings import get_str_list

if TYPE_CHECKING:
    from studio.services.review import PlayNetwork

log = logging.getLogger(__name__)

CHECKPOINT_ITEM = "Checkpoint file…"
#: The settings keys of the agent box's last choice: a registered agent's name (or a checkpoint's agent),
#: and the checkpoint file ("" for a registered agent).
AGENT_KEY = "play/agent"
CHECKPOINT_KEY = "play/agent_checkpoint"


def preferred_agents(names: list[str]) -> list[str]:
    """Registered agents, strongest-looking first (the default hint should be a good one)."""
    order = ["expectimax", "greedy"]
    return [n for n in order if n in names] + [n for n in names if n not in order]


class AgentPicker(QComboBox):
    """Which agent gives hints and plays when you watch: the store's trained n-tuple networks (strongest
    first), registered agents (the useful ones first), the checkpoints used lately, and "Checkpoint
    file…" to pick another. ``spec`` is the choice; ``chosen`` fires when the user makes one (the last
    choice is remembered in the settings). With nothing remembered, the strongest network is the choice
    when it is a strong one (as it is the default reviewer: the hint and the coach then agree), else the
    first registered agent. ``networks`` gives the networks; it is asked again each time the list opens,
    so a run that finished since shows up."""

    chosen = Signal()

    def __init__(
        self,
        settings: QSettings,
        parent: QWidget | None = None,
        *,
        networks: Callable[[], list[PlayNetwork]] | None = None,
    ) -> None:
        from agents.registry import agent_names

        super().__init__(parent)
        self.settings = settings
        self._networks = networks
        self.setObjectName("agentCombo")
        self.setToolTip("Which agent gives hints and plays when you watch")
        self._n_networks = 0
        for name in preferred_agents(agent_names()):
            self.addItem(name, AgentSpec(name))
        for path in self._recent_checkpoints():
            self.addItem(f"{Path(path).name} (checkpoint)", AgentSpec.from_checkpoint(path))
        self.addItem(CHECKPOINT_ITEM, None)
        self._index = 0
        strongest = self._offer_networks()
        self._restore_choice(strongest)
        self.activated.connect(self._on_activated)

    def _read_networks(self) -> list[PlayNetwork]:
        if self._networks is None:
            return []
        try:
            return self._networks()
        except Exception:  # a store that cannot be read now: the list goes on without its networks
            log.exception("the store's n-tuple networks could not be listed for the Play tab")
            return []

    def _offer_networks(self) -> AgentSpec | None:
        """(Re)list the store's networks at the top, keeping the current choice; the strongest one's spec
        when it is strong enough to be the default."""
        found = self._read_networks()
        current = self.currentData()
        for _ in range(self._n_networks):
            self.removeItem(0)
        files = {_real(str(net.spec.checkpoint)) for net in found}
        for i in reversed(range(self.count())):  # a recent checkpoint that is one of them: listed once
            data = self.itemData(i)
            if (
                isinstance(data, AgentSpec)
                and data.checkpoint is not None
                and _real(data.checkpoint) in files
            ):
                self.removeItem(i)
        for i, net in enumerate(found):
            self.insertItem(i, net.label, net.spec)
            games = (
                f"its games averaged {net.score:,.0f} points" if math.isfinite(net.score) else "no score yet"
            )
            tip = f"{net.spec.checkpoint}\n{games}"
            self.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)
        self._n_networks = len(found)
        if isinstance(current, AgentSpec):
            # the choice stays: its item again, or (its run gone from the store) the file it was
            self.select(current, remember=False)
        return found[0].spec if found and found[0].strong else None

    def _find(self, spec: AgentSpec) -> int:
        """The item of ``spec``: the same agent, or the same checkpoint file however its path is
        written (-1: none)."""
        target = None if spec.checkpoint is None else _real(spec.checkpoint)
        for i in range(self.count()):
            data = self.itemData(i)
            if data == spec:
                return i
            file = data.checkpoint if isinstance(data, AgentSpec) else None
            if target is not None and file is not None and _real(file) == target:
                return i
        return -1

    def showPopup(self) -> None:
        self._offer_networks()
        super().showPopup()

    @property
    def spec(self) -> AgentSpec | None:
        data = self.currentData()
        return data if isinstance(data, AgentSpec) else None

    def _recent_checkpoints(self) -> list[str]:
        return [p for p in get_str_list(self.settings, "play/checkpoints") if Path(p).exists()][:5]

    def select(self, spec: AgentSpec, *, remember: bool = True) -> None:
        """Choose ``spec``, adding it to the list (before "Checkpoint file…") if it is new; the choice
        is the one the next start comes back to (``remember``)."""
        i = self._find(spec)
        if i >= 0:
            data = self.itemData(i)
            if spec.checkpoint is not None and spec.name and not data.name:
                self.setItemData(i, spec)  # the file's agent became known (Use in Play names it)
            self.setCurrentIndex(i)
            self._index = i
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

    def _restore_choice(self, default: AgentSpec | None = None) -> None:
        """Come back to the choice remembered by :meth:`_remember`; with none (or a file that is gone),
        ``default`` (the strongest network), else the first registered agent."""
        name = str(self.settings.value(AGENT_KEY, "") or "")
        checkpoint = str(self.settings.value(CHECKPOINT_KEY, "") or "")
        if checkpoint and Path(checkpoint).is_file():
            self.select(AgentSpec.from_checkpoint(checkpoint, name or None), remember=False)
            return
        # A file that is gone falls back like a fresh start, not to an untrained agent of its kind.
        idx = self.findText(name) if name and not checkpoint else -1
        if idx < 0 and default is not None:
            self.select(default, remember=False)
            return
        self.setCurrentIndex(idx if idx >= 0 else self._n_networks)
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


def _real(path: str) -> str:
    """``path`` with links and ``..`` resolved: one file, one text."""
    return os.path.realpath(path)
