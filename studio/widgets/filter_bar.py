"""``FilterBar``: the row of game filters above a list of games, as one :class:`GameFilter`.

The Games tab shows every filter (source, agent, score, max tile, status, period); the Replay tab only
the source (its own text box narrows the list it has). Either way the bar's :meth:`FilterBar.game_filter`
is what goes to :meth:`GameStore.list_games`, and ``changed`` is emitted with it whenever the person
changes a filter (a combo box at once, a typed field when its editing finishes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QSpinBox, QWidget

from studio.services.library import MINE, SOURCE_FILTERS, GameFilter
from studio.text import GAME_STATUS_WORDS

#: Every filter the bar can show, in the order it shows them.
FIELDS: tuple[str, ...] = ("source", "agent", "min_score", "min_max_tile", "status", "period")
PERIODS: tuple[tuple[str, float | None], ...] = (
    ("any date", None),
    ("last 24 hours", 86_400.0),
    ("last 7 days", 7 * 86_400.0),
    ("last 30 days", 30 * 86_400.0),
    ("last year", 365 * 86_400.0),
)
MAX_TILE_EXPONENTS = range(5, 18)  # "max tile ≥ 32" ... "max tile ≥ 131072"


class FilterBar(QWidget):
    """The filters ``fields`` (a subset of :data:`FIELDS`, shown in that order); ``changed(GameFilter)``.

    The widgets are attributes (``source``, ``agent``, ``minScore``, ``minTile``, ``status``,
    ``period``; None for a filter not shown), named ``<name>SourceFilter``, ``<name>AgentFilter``,
    ``<name>MinScore``, ``<name>MinTile``, ``<name>StatusFilter`` and ``<name>PeriodFilter``.
    ``clock`` gives "now" for the period (seconds).
    """

    changed = Signal(object)

    def __init__(
        self,
        name: str,
        fields: Sequence[str] = FIELDS,
        parent: QWidget | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        unknown = [f for f in fields if f not in FIELDS]
        if unknown:
            raise ValueError(f"no filter {', '.join(unknown)}: the filters are {', '.join(FIELDS)}")
        self.setObjectName(f"{name}FilterBar")
        self._name = name
        self._clock = clock
        self._settings: QSettings | None = None
        self.fields = tuple(f for f in FIELDS if f in fields)
        self.source: QComboBox | None = None
        self.agent: QLineEdit | None = None
        self.minScore: QSpinBox | None = None
        self.minTile: QComboBox | None = None
        self.status: QComboBox | None = None
        self.period: QComboBox | None = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        if "source" in fields:
            # "your games" first: the person's own and those shared with an agent ("human" alone
            # misses every game Watch played a part of), as the Progress tab counts them.
            sources = [("your games", MINE), *((s, s) for s in SOURCE_FILTERS)]
            self.source = self._combo(f"{name}SourceFilter", "all sources", sources)
            row.addWidget(self.source)
        if "agent" in fields:
            self.agent = QLineEdit()
            self.agent.setObjectName(f"{name}AgentFilter")
            self.agent.setPlaceholderText("agent")
            self.agent.setClearButtonEnabled(True)
            self.agent.editingFinished.connect(self._emit)
            row.addWidget(self.agent)
        if "min_score" in fields:
            self.minScore = QSpinBox()
            self.minScore.setObjectName(f"{name}MinScore")
            self.minScore.setRange(0, 100_000_000)
            self.minScore.setSingleStep(1000)
            self.minScore.setPrefix("score ≥ ")
            self.minScore.editingFinished.connect(self._emit)
            row.addWidget(self.minScore)
        if "min_max_tile" in fields:
            tiles = [(f"max tile ≥ {2**e}", 2**e) for e in MAX_TILE_EXPONENTS]
            self.minTile = self._combo(f"{name}MinTile", "any max tile", tiles)
            row.addWidget(self.minTile)
        if "status" in fields:
            statuses = [(text, key) for key, text in GAME_STATUS_WORDS.items()]
            self.status = self._combo(f"{name}StatusFilter", "any status", statuses)
            row.addWidget(self.status)
        if "period" in fields:
            self.period = self._combo(f"{name}PeriodFilter", PERIODS[0][0], list(PERIODS[1:]))
            row.addWidget(self.period)
        row.addStretch(1)

    def _combo(self, name: str, anything: str, items: Sequence[tuple[str, object]]) -> QComboBox:
        combo = QComboBox()
        combo.setObjectName(name)
        combo.addItem(anything, None)
        for text, data in items:
            combo.addItem(text, data)
        combo.currentIndexChanged.connect(self._emit)
        return combo

    def _emit(self) -> None:
        self._save()
        self.changed.emit(self.game_filter())

    # ------------------------------------------------------------------ memory
    def _combos(self) -> dict[str, QComboBox]:
        named = {
            "source": self.source,
            "min_max_tile": self.minTile,
            "status": self.status,
            "period": self.period,
        }
        return {k: c for k, c in named.items() if c is not None}

    def remember(self, settings: QSettings | None) -> None:
        """Keep the filters in ``settings`` (under ``filters/<name>/``): what was chosen is back after
        the window is closed and opened again. Restores what was kept, without ``changed`` (the caller
        reads its list once after). A kept value the bar no longer offers (an old version's) is ignored."""
        self._settings = settings
        if settings is None:
            return
        prefix = f"filters/{self._name}/"
        for key, combo in self._combos().items():
            kept = settings.value(prefix + key)
            index = next((i for i in range(combo.count()) if str(combo.itemData(i)) == str(kept)), -1)
            if kept is not None and index >= 0:
                combo.blockSignals(True)
                combo.setCurrentIndex(index)
                combo.blockSignals(False)
        if self.agent is not None:
            self.agent.setText(str(settings.value(prefix + "agent", "") or ""))
        if self.minScore is not None:
            try:
                score = int(str(settings.value(prefix + "min_score", 0) or 0))
            except ValueError:
                score = 0
            self.minScore.blockSignals(True)
            self.minScore.setValue(max(0, min(score, self.minScore.maximum())))
            self.minScore.blockSignals(False)

    def _save(self) -> None:
        if self._settings is None:
            return
        prefix = f"filters/{self._name}/"
        for key, combo in self._combos().items():
            self._settings.setValue(prefix + key, str(combo.currentData()))
        if self.agent is not None:
            self._settings.setValue(prefix + "agent", self.agent.text())
        if self.minScore is not None:
            self._settings.setValue(prefix + "min_score", self.minScore.value())

    def game_filter(self) -> GameFilter:
        """The games the shown filters let through (the period counts back from now)."""
        seconds = None if self.period is None else self.period.currentData()
        agent = None if self.agent is None else self.agent.text().strip() or None
        return GameFilter(
            source=None if self.source is None else self.source.currentData(),
            agent=agent,
            min_score=None if self.minScore is None else self.minScore.value() or None,
            min_max_tile=None if self.minTile is None else self.minTile.currentData(),
            status=None if self.status is None else self.status.currentData(),
            since=self._clock() - seconds if seconds else None,
        )

    def reset(self) -> None:
        """Every filter back to "any", without ``changed`` (the caller re-reads its list once)."""
        for combo in (self.source, self.minTile, self.status, self.period):
            if combo is not None:
                combo.blockSignals(True)
                combo.setCurrentIndex(0)
                combo.blockSignals(False)
        if self.agent is not None:
            self.agent.clear()
        if self.minScore is not None:
            self.minScore.setValue(0)
        self._save()
