"""The game-record store: every game and training run in one embedded SQLite database (WAL).

``from engine.store import GameStore, GameRecorder, GameRecord, GameSummary, RunSummary, StoreError``

* :mod:`engine.store.schema` — tables, file identity check, durability (why ``synchronous=NORMAL``).
* :mod:`engine.store.db` — :class:`GameStore` (games and moves; interrupted-writer sweep) and
  :class:`GameRecorder` (logs an ``engine.Game`` move by move).
* :mod:`engine.store.runs` — the runs half of :class:`GameStore`: runs, metric history, checkpoints.
* :mod:`engine.store.exchange` — ``.npz`` (seed 003's layout) and ``.jsonl`` export / checked import.
* :mod:`engine.store.codec` — board and spawn byte encodings; :mod:`engine.store.metrics` — metric
  blocks; :mod:`engine.store.values` — JSON / seed / rules column conversions.

numpy and the standard library only; never prints.
"""

from engine.store.db import GameRecorder, GameStore, to_timestamp
from engine.store.model import (
    GAME_STATUSES,
    RUN_STATUSES,
    SOURCES,
    CheckpointInfo,
    GameRecord,
    GameSummary,
    RunMessage,
    RunSummary,
    StoreError,
    format_time,
)

__all__ = [
    "GAME_STATUSES",
    "RUN_STATUSES",
    "SOURCES",
    "CheckpointInfo",
    "GameRecord",
    "GameRecorder",
    "GameStore",
    "GameSummary",
    "RunMessage",
    "RunSummary",
    "StoreError",
    "format_time",
    "to_timestamp",
]
