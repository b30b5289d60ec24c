"""The Play tab's choice of agent: which one gives hints and plays when the person watches."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QWidget

from agents.spec import AgentSpec
from studio.settings import get_str_list

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
