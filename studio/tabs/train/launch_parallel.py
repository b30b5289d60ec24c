"""The launch form's Parallel play box: how many processes (or Ray actors) play an agent's training
games at once, where, and a note when the agent plays them in one process."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLineEdit, QWidget

from studio.services.runs import BACKENDS
from studio.tabs.common import NOTE_STYLE, label, spin


class ParallelBox(QGroupBox):
    """Workers, backend, Ray address. Signal: ``backendChanged()``."""

    backendChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Parallel play", parent)
        self.setObjectName("parallelBox")
        pl = QFormLayout(self)
        pl.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.workersSpin = spin("workersSpin", 1, 256, 1, "Processes (or Ray actors) that play games at once")
        self.backendCombo = QComboBox()
        self.backendCombo.setObjectName("backendCombo")
        for name, text in zip(BACKENDS, ("Local processes", "Ray")):
            self.backendCombo.addItem(text, name)
        self.backendCombo.setToolTip(
            "Where the parallel games run (Ray: the optional extra, pip install -e .[ray])"
        )
        self.backendCombo.currentIndexChanged.connect(lambda _i: self.backendChanged.emit())
        self.rayAddressEdit = QLineEdit()
        self.rayAddressEdit.setObjectName("rayAddressEdit")
        self.rayAddressEdit.setPlaceholderText("empty: a local Ray; or HOST:6379")
        self.rayAddressEdit.setToolTip("A running Ray cluster to join (ray start --head on that machine)")
        self.parallelNote = label("parallelNote", wrap=True, style=NOTE_STYLE)
        pl.addRow("Workers", self.workersSpin)
        pl.addRow("Backend", self.backendCombo)
        pl.addRow("Ray address", self.rayAddressEdit)
        pl.addRow(self.parallelNote)

    def values(self) -> dict[str, Any]:
        """``workers``, ``backend`` and ``ray_address`` as a run request takes them."""
        backend = str(self.backendCombo.currentData())
        address = (self.rayAddressEdit.text().strip() or None) if backend == "ray" else None
        return {"workers": self.workersSpin.value(), "backend": backend, "ray_address": address}

    def sync(self, parallel: bool, agent_name: str) -> None:
        """Editable only for an agent that plays in parallel (``parallel``); the address only for Ray."""
        for w in (self.workersSpin, self.backendCombo):
            w.setEnabled(parallel)
        self.rayAddressEdit.setEnabled(parallel and self.backendCombo.currentData() == "ray")
        self.parallelNote.setText(
            "" if parallel else f"{agent_name or 'This agent'} plays its training games in one process."
        )
