"""Many games ending at once (PPO, DQN on the batched engine) keep the window responsive (issue 48).

A learner of many games at once sends updates first (no game has ended yet), then a burst of finished
games in one message; a constant series among them (the learning rate) folds into a line of text, so
the grid of plots is laid out again. Qt repainted every plot that moved in one frame: 5-7 plots, 60-100
ms of the window's thread, the 150-300 ms stalls of ``bench gui -o agent=ppo``. Now the moved plots
paint one a frame, the score panels wait for the first games instead of folding away at the first
update, and the burst's games are drawn, every one, in order, on an x axis in moves.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication

from agents import registry
from agents.base import Budget, Clock, Control, MetricEvent, TrainContext
from agents.config import AgentConfig, knob
from agents.metrics import LOSS, LR, MetricInfo
from engine import Game
from tests.agents.fake_learner import RandomLearner
from tests.studio.tab_fixtures import shown_train_tab

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
NAME = "burst_learner"
GAMES = 40
UPDATES = 3
GAME_LENGTH = MetricInfo("game_length", "Game length", group="Game length", smoothable=False)


@dataclass
class BurstConfig(AgentConfig):
    games: int = knob(GAMES, "games that end in one step", low=1, high=10_000)


class BurstLearner(RandomLearner):
    """Updates first, then ``games`` finished games in one burst, then nothing new until stopped."""

    name = NAME
    config_cls = BurstConfig
    description = "test double: many games end at once"
    metrics = (LOSS, LR, GAME_LENGTH)

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        control = control or Control()
        clock = Clock(self.counters)
        played = []
        for _ in range(self.config.games):  # type: ignore[attr-defined]
            game = Game(rules=self.rules, seed=int(self.rng.integers(1 << 30)))
            while not game.game_over:
                game.step(self.act(game))
            played.append(game)
        for k in range(UPDATES):  # the first rollouts: updates, no game ended yet
            time.sleep(0.3)  # apart: the window gets them one message each
            self.counters.steps += 64
            self.counters.updates += 1
            metrics = {"loss": 1.0 / (k + 1), "steps_per_s": 1000.0 + k}
            yield MetricEvent("update", 0, self.counters.steps, clock.tick(), metrics, progress=0.0)
        for game in played:  # right after the last update, back to back: one message
            self.counters.steps += game.moves
            self.counters.episodes += 1
            per_game = {"moves": float(game.moves), "game_length": float(game.moves), "lr": 1e-3}
            yield self.episode_event(clock, game, 0.01, per_game, board=game.board)
        time.sleep(0.3)
        # The child sends what it holds when the next event comes: this one.
        yield MetricEvent(
            "update", self.counters.episodes, self.counters.steps, clock.tick(), {}, progress=0.01
        )
        while control.checkpoint():  # trains on, saying nothing new, until stopped
            time.sleep(0.02)


class PaintLog(QObject):
    """Which plots each frame painted: a frame is one paint pass of the window (an UpdateRequest)."""

    def __init__(self) -> None:
        super().__init__()
        self.frame = 0
        self.painted: list[tuple[int, str]] = []  # (frame, plot's object name)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.UpdateRequest:
            self.frame += 1
        elif kind == QEvent.Type.Paint:
            plot = watched.parent()
            if isinstance(plot, pg.PlotWidget):
                self.painted.append((self.frame, plot.objectName()))
        return False

    def plots_a_frame(self, since: int) -> dict[int, set[str]]:
        frames: dict[int, set[str]] = {}
        for frame, name in self.painted[since:]:
            frames.setdefault(frame, set()).add(name)
        return frames


@pytest.fixture
def tab(qtbot: Any, store: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    target = f"{__name__}:BurstLearner"
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents({NAME: target}))
    yield from shown_train_tab(qtbot, store, monkeypatch, size=(1200, 800))


def test_a_burst_of_games_paints_one_plot_a_frame_and_draws_every_game(qtbot, tab, store) -> None:
    tab.launch.select_agent(NAME)
    tab.launch.set_budget(minutes=5)
    log = PaintLog()
    app = QApplication.instance()
    app.installEventFilter(log)
    try:
        with qtbot.waitSignal(tab.runStarted, timeout=30_000):
            qtbot.mouseClick(tab.startButton, CLICK)
        live = tab.live[0]
        curves = tab.curves
        qtbot.waitUntil(lambda: live.series.count("loss") == UPDATES, timeout=30_000)
        # The updates came, no game yet: the score panels wait for the games (they used to fold away
        # here and come back with the burst, the grid laid out once more).
        qtbot.wait(200)
        assert {"Score", "Max tile", "Loss", "Learning rate", "Game length"} <= set(curves.panel_titles())
        since, redraws = len(log.painted), curves.redraws
        # The games came, and the learning rate folded into text: the grid re-laid.
        folded = "Learning rate = 0.001 (constant)"
        qtbot.waitUntil(lambda: folded in curves.constants, timeout=30_000)
        assert live.series.count("score") == GAMES
        # Every plot shown paints again...
        shown = set(curves.panel_titles())
        assert "Learning rate" not in shown
        names = {w.objectName() for w in curves.findChildren(pg.PlotWidget) if w.isVisible()}
        assert len(names) == len(shown) >= 5

        def all_painted() -> bool:
            return names <= {n for _f, n in log.painted[since:]}

        qtbot.waitUntil(all_painted, timeout=10_000)
        qtbot.wait(300)  # and what follows
        frames = log.plots_a_frame(since)
        # ... one a frame (and the one before it settling), never the whole grid at once.
        assert max(len(v) for v in frames.values()) <= 2, frames
        # The burst (40 games in one message) is a few plot updates, not one per game.
        assert curves.redraws - redraws <= 2 * len(names)

        # Every game of the burst is drawn, in order, on an x axis in moves: the values stored.
        run_id = live.run_id
        with qtbot.waitSignal(tab.trainingFinished, timeout=30_000):
            qtbot.mouseClick(tab.stopButton, CLICK)
    finally:
        app.removeEventFilter(log)
    cols = store.run_metrics(run_id)
    stored = ~np.isnan(cols["game_length"])
    assert stored.sum() == GAMES  # one record per finished game
    x, y = curves.curve("gameLengthPlot", "Game length").item.getData()
    np.testing.assert_array_equal(y, cols["game_length"][stored])
    np.testing.assert_array_equal(x, cols["step"][stored])
    assert np.all(np.diff(x) > 0)
    # The score's mean line: the running mean of the stored scores, game by game, in their order.
    scores = cols["score"][~np.isnan(cols["score"])]
    mean_name = next(n for n in curves.legend_names("Score") if n.startswith("Mean score"))
    _x, mean = curves.curve("scorePlot", mean_name).item.getData()
    np.testing.assert_allclose(mean, np.cumsum(scores) / np.arange(1, GAMES + 1))


def test_score_panels_wait_for_the_first_games_and_go_for_a_run_that_plays_none(qtbot) -> None:
    """Updates before any game ended (episode counter 0) keep Score and Max tile up, empty; updates
    of a run that counts episodes without a score (imitation: an epoch is an episode) drop them."""
    from studio.services.runs_model import LIVE_KEY
    from studio.widgets.curves import CurvesPanel, RunSeries
    from tests.studio.tab_fixtures import shown

    panel = shown(qtbot, CurvesPanel(), (900, 700))
    panel.set_agent("ppo")
    run = RunSeries("run 1 ppo", agent="ppo", run_id=1)
    panel.set_runs([(LIVE_KEY, run)])
    update = {"loss": 2.0, "value_loss": 3.0, "entropy": 1.3, "clip_frac": 0.1, "steps_per_s": 9e3}
    panel.add_events([MetricEvent("update", 0, 8192, 1.0, update)])
    panel.redraw()
    assert panel.panel_titles()[:3] == ["Score", "Max tile", "Loss"]
    game = {"score": 1200.0, "max_tile": 128.0, "moves": 130.0, "lr": 3e-4, "steps_per_s": 9e3}
    panel.add_events([MetricEvent("episode", k, 8192 + 130 * k, 1.1, game) for k in (1, 2)])
    panel.redraw()
    assert panel.panel_titles()[:3] == ["Score", "Max tile", "Loss"]

    imitation = RunSeries("run 2 imitation", agent="imitation", run_id=2)
    panel.set_agent("imitation")
    panel.set_runs([(LIVE_KEY, imitation)])
    epoch = {"loss": 1.5, "accuracy": 0.4, "lr": 1e-3, "steps_per_s": 5e4}
    panel.add_events([MetricEvent("update", 1, 4096, 2.0, epoch)])
    panel.redraw()
    titles = panel.panel_titles()
    assert "Loss" in titles and "Score" not in titles and "Max tile" not in titles
