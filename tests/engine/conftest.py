"""Fixtures the engine tests share: a writable copy of the schema-1 store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.engine.exchange_helpers import FIXTURES


@pytest.fixture
def v1_path(tmp_path: Path) -> Path:
    """A copy of the schema-1 fixture (the checked-in file is never opened for writing)."""
    path = tmp_path / "studio.sqlite3"
    shutil.copyfile(FIXTURES / "store_v1.sqlite", path)
    return path
