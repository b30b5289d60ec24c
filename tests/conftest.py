"""Shared test set-up: offscreen Qt / pygame, a temporary data dir for every test."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import pytest


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Tests never touch the user's real data dir."""
    path = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("STUDIO2048_DATA_DIR", str(path))
    return path


@pytest.fixture
def data_dir(_isolated_data_dir):
    return _isolated_data_dir
