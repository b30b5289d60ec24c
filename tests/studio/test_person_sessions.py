"""A seeded random sequence of person-like actions on a fresh profile ends well.

The short version of ``python main.py bench person`` (20 sessions of 300 actions there): keys,
clicks, tab switches, menus, typing, dialogs opened and cancelled, runs and arenas started and
stopped. Each session must end with no uncaught exception and no Qt warning, nothing stuck (no dialog
left open, the Play board moving on an arrow key, every run stopped) and the store consistent (SQLite's
integrity check, every game's moves leading from board to board). A failure names its seed and the last
actions: ``python main.py bench person --seed N -o sessions=1 -o actions=A`` replays it.
"""

from __future__ import annotations

import pytest

from studio.commands.bench_person import run_session

pytest_plugins = ("tests.studio.gui_fixtures",)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_person_session_ends_with_nothing_broken(qapp, seed: int) -> None:
    outcome = run_session(seed, 120)
    assert outcome.actions == 120, f"stopped early: {outcome.failures} after {' > '.join(outcome.trail)}"
    assert outcome.ok, f"seed {seed}: {outcome.failures}; last actions: {' > '.join(outcome.trail[-10:])}"
