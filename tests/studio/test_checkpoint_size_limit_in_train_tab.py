"""The Train tab's "Largest checkpoint" field (issue #45): typed by a person, it reaches the run; a
checkpoint past it is refused while training goes on, and the window says so in its status line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt

from agents import registry
from engine.store import GameStore
from tests.agents.test_checkpoint_size_limit import BulkyLearner
from tests.studio.tab_fixtures import shown_train_tab
from tests.studio.train_fakes import FAKES

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton


class SwellingLearner(BulkyLearner):
    """A checkpoint of 0.6 MB from episode 3 (past half of 1 MB), 1.5 MB from episode 5 (past it)."""

    name = "swelling-learner"

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, meta = super().get_state()
        e = self.counters.episodes
        arrays["bulk"] = np.zeros(0 if e < 3 else 80_000 if e < 5 else 200_000)
        return arrays, meta


@pytest.fixture
def tab(qtbot: Any, store: GameStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    agents = {**FAKES, SwellingLearner.name: f"{__name__}:SwellingLearner"}
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents(agents))
    yield from shown_train_tab(qtbot, store, monkeypatch, size=(1200, 900))


def test_a_checkpoint_past_the_typed_limit_is_refused_and_said(
    qtbot: Any, tab: Any, store: GameStore
) -> None:
    launch = tab.launch
    launch.select_agent(SwellingLearner.name)
    launch.set_budget(episodes=6)
    spin = launch.maxCheckpointSpin
    assert spin.value() == 1024.0 and spin.suffix() == " MB"
    spin.setFocus()
    qtbot.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(spin, "1")
    qtbot.keyClick(spin, Qt.Key.Key_Tab)
    assert spin.value() == 1.0
    spin.grab().save("/tmp/shots/max_checkpoint_spin.png")
    said: list[str] = []
    tab.status.connect(said.append)
    with qtbot.waitSignal(tab.trainingFinished, timeout=60_000):
        qtbot.mouseClick(tab.startButton, CLICK)
    run = store.list_runs()[0]
    assert run.status == "finished" and run.episodes == 6
    # the only checkpoint a short run saves is its last, 1.5 MB: refused, nothing written
    assert store.run_checkpoints(run.id) == []
    [message] = [m.message for m in store.run_messages(run.id)]
    assert message.startswith(
        f"checkpoint at step {run.steps:,} refused: swelling-learner's checkpoint would be 1.5"
    )
    assert message.endswith("past the 1 MB limit: not saved (raise the checkpoint size limit to keep it)")
    assert f"run {run.id}: {message}" in said
    assert said[-1] == f"run {run.id} finished; last notice: {message}"
    tab.grab().save("/tmp/shots/train_tab_checkpoint_refused.png")
