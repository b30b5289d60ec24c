"""Shared test set-up: offscreen Qt / pygame, a temporary data dir for every test, a store in it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import pytest

if TYPE_CHECKING:
    from engine.store import GameStore


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Tests never touch the user's real data dir."""
    path = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("STUDIO2048_DATA_DIR", str(path))
    return path


@pytest.fixture
def data_dir(_isolated_data_dir):
    return _isolated_data_dir


@pytest.fixture
def store(data_dir: Path) -> Iterator[GameStore]:
    """A game store in the test's temporary data dir, closed after the test.

    A test file that needs more around it (fake agents registered, say) overrides it with a fixture of
    the same name that asks for this one."""
    from engine.store import GameStore

    with GameStore.open(data_dir) as s:
        yield s
