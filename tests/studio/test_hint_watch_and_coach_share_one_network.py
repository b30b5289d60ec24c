"""Issue 47 item 11: a window that plays one n-tuple checkpoint in several roles (the Play tab's hint
and Watch agent, the coach's reviewer at 2-ply) loads its network once, to play (no learning
state): each role has an agent of its own (settings, search table) over the same weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from agents.base import Budget
from agents.ntuple import NTupleAgent, NTupleConfig
from agents.spec import AgentSpec
from engine import Direction, Rules

pytest_plugins = ("tests.studio.gui_fixtures",)

CLICK = Qt.MouseButton.LeftButton
KEYS = {
    Direction.UP: Qt.Key.Key_Up,
    Direction.LEFT: Qt.Key.Key_Left,
    Direction.DOWN: Qt.Key.Key_Down,
    Direction.RIGHT: Qt.Key.Key_Right,
}


def _network_run(store, data_dir: Path) -> Path:
    """A small trained network saved as run 1's checkpoint (with its TC sums, as a run saves it):
    the store's only n-tuple network, so the coach's default reviewer."""
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=3)
    list(agent.train(Budget(episodes=60)))
    run_id = store.create_run("ntuple", agent.config.to_dict(), Rules(), {"episodes": 60})
    path = agent.save(data_dir / "checkpoints" / f"run-{run_id}" / "ntuple.npz")
    store.add_checkpoint(run_id, path, agent.counters.episodes, agent.counters.steps, final=True)
    return path


def test_hint_and_the_coachs_reviewer_read_one_network(qtbot, window, data_dir):
    play = window.play
    path = _network_run(play.store, data_dir)
    play.set_agent(AgentSpec.from_checkpoint(path, "ntuple"))

    play.last_hint = None
    qtbot.mouseClick(play.hintButton, CLICK)  # the chosen agent rates the moves
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=30000)
    assert not play.hintStatus.text().startswith("n-tuple run")  # the agent's hint, not the coach's
    (hinter,) = play.thinker._agents.values()

    qtbot.mouseClick(play.coachCheck, CLICK)
    assert play.coachCheck.isChecked()
    game = play.recorder.game
    move = hinter.act(game)
    before = game.copy()
    qtbot.keyClick(play.board, KEYS[move])
    qtbot.waitUntil(lambda: play.last_grade is not None, timeout=30000)
    assert play.last_grade.error is None
    assert play.last_grade.agent_name == "n-tuple run 1, 2-ply"
    (reviewer,) = play.thinker.reviewers.cache.values()

    # one network, read by both; each role with its own settings and search table
    assert isinstance(hinter, NTupleAgent) and isinstance(reviewer, NTupleAgent)
    assert reviewer is not hinter and reviewer.weights is hinter.weights
    assert (hinter.config.search_depth, reviewer.config.search_depth) == (1, 2)
    assert reviewer._tt is not hinter._tt
    assert hinter._tc is None and reviewer._tc is None  # loaded to play: no learning state
    # and the answers are the file's: the coach's grade is exactly the one a lone 2-ply copy gives
    from studio.services.review import grade_played

    alone = NTupleAgent.load(path)
    assert isinstance(alone, NTupleAgent)
    alone.config = alone.config.replace(search_depth=2)
    np.testing.assert_array_equal(alone.weights, hinter.weights)
    lone = grade_played(alone, before.rules, before.board, move, before.score, before.moves)
    assert play.last_grade.grade.values == lone.values and play.last_grade.grade.played is move
    assert (play.last_grade.grade.best, play.last_grade.grade.grade) == (lone.best, lone.grade)
    play.grab().save("/tmp/shots/coach_with_shared_network.png")
