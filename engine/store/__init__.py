"""The game-record store: every game and training run in one embedded SQLite database (WAL).

``from engine.store import GameStore, GameFilter, GameRecorder, Player, GameRecord, GameSummary, RunSummary, StoreError``

* :mod:`engine.store.schema` — tables, file identity check, durability (why ``synchronous=NORMAL``),
  migrations of older stores (run in place on open).
* :mod:`engine.store.db` — :class:`GameStore` (games and moves; interrupted-writer sweep).
* :mod:`engine.store.filters` — :class:`GameFilter`: which games a listing shows, and its SQL.
* :mod:`engine.store.recorder` — :class:`GameRecorder`: one game played move by move (by the person,
  agents, or both in turn), stored as one record with the :class:`Player` of every move.
* :mod:`engine.store.reviews` — the reviews half of :class:`GameStore`: a reviewer's values of every
  move of a game, written in chunks (a killed review resumes).
* :mod:`engine.store.sweeps` — sweeps: a spec and its planned trials, each linked to its run.
* :mod:`engine.store.runs` — the runs half of :class:`GameStore`: runs, metric history, checkpoints.
* :mod:`engine.store.base` — what the runs / reviews / sweeps halves share: transactions, one-row
  reads, the status and driver of a run or sweep.
* :mod:`engine.store.exchange` — ``.npz`` (seed 003's layout) and ``.jsonl`` export / checked import.
* :mod:`engine.store.codec` — board and spawn byte encodings; :mod:`engine.store.metrics` — metric
  blocks; :mod:`engine.store.values` — JSON / seed / rules column conversions.

numpy and the standard library only; never prints.
"""

from engine.store.db import GameStore
from engine.store.filters import GameFilter, to_timestamp
from engine.store.model import (
    GAME_STATUSES,
    HUMAN,
    PLAYER_KINDS,
    RUN_STATUSES,
    SOURCE_FILTERS,
    SOURCES,
    CheckpointInfo,
    GameRecord,
    GameSummary,
    Player,
    RunMessage,
    RunSummary,
    StoreError,
    format_time,
)
from engine.store.recorder import GameRecorder
from engine.store.reviews import ReviewInfo
from engine.store.sweeps import SWEEP_STATUSES, SweepInfo, TrialInfo

__all__ = [
    "GAME_STATUSES",
    "HUMAN",
    "PLAYER_KINDS",
    "RUN_STATUSES",
    "SOURCES",
    "SOURCE_FILTERS",
    "SWEEP_STATUSES",
    "CheckpointInfo",
    "GameFilter",
    "GameRecord",
    "GameRecorder",
    "GameStore",
    "GameSummary",
    "Player",
    "ReviewInfo",
    "RunMessage",
    "RunSummary",
    "StoreError",
    "SweepInfo",
    "TrialInfo",
    "format_time",
    "to_timestamp",
]
