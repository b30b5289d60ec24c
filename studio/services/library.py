"""The store as tabs and widgets reach it (Qt-free): the games listings' filters and constants, and
connections of a worker thread's own.

Tabs and widgets import nothing from :mod:`engine.store` at run time (an import-linter contract in
pyproject.toml): what they need of it comes through this module and the other services, so the
store's modules can be rearranged without touching a widget, and a widget's test needs no store
internals.
"""

from __future__ import annotations

from pathlib import Path

from engine.store import SOURCE_FILTERS, SOURCES, GameFilter, GameStore, format_time
from engine.store.db import GameStats
from engine.store.filters import MINE

__all__ = [
    "MINE",
    "SOURCES",
    "SOURCE_FILTERS",
    "GameFilter",
    "GameStats",
    "connect",
    "format_time",
    "open_data_dir",
]


def connect(db_path: str | Path) -> GameStore:
    """A connection of the calling thread's own to the store file ``db_path`` (SQLite connections
    stay in the thread that opened them: a worker thread opens its own, as a context manager)."""
    return GameStore(db_path)


def open_data_dir(data_dir: str | Path) -> GameStore:
    """The store of the data directory ``data_dir`` (created there when there is none yet)."""
    return GameStore.open(data_dir)
