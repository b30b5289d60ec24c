"""Fixtures for the main-window tests, loaded with ``pytest_plugins = ("tests.studio.gui_fixtures",)``.

Kept out of ``conftest.py`` on purpose: several people add tests under ``tests/studio`` at once.
Every window gets a QSettings file in a temporary directory, so tests never read or write the
user's real settings, and a store in the test's temporary data dir (see ``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings


@pytest.fixture(autouse=True)
def _temporary_qsettings_location(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Even code that builds its own ``QSettings(org, app)`` writes under a temporary directory."""
    where = str(tmp_path_factory.mktemp("qsettings"))
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
            QSettings.setPath(fmt, scope, where)
    yield


@pytest.fixture
def qsettings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "studio-settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, data_dir: Path, qsettings: QSettings) -> Iterator:
    from studio.app import create_window

    win = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.close()


@pytest.fixture
def rater_agent() -> Iterator[str]:
    """Registers the test agents of ``gui_helpers`` for the duration of a test."""
    from agents import registry

    with registry.registered(
        {
            "test_rater": "tests.studio.gui_helpers:RaterAgent",
            "test_slow": "tests.studio.gui_helpers:SlowAgent",
        }
    ):
        yield "test_rater"
