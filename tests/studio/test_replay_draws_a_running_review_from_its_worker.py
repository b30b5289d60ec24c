"""While a review runs, the Replay tab draws the review so far that its worker grades and hands over:
the GUI thread reads no review back from the store (issue 46: "the GUI thread only draws")."""

from __future__ import annotations

import threading

from engine.store import GameStore
from tests.studio.test_replay_review import LEFT, _choose, _greedy_game, slow_reviewer  # noqa: F401

pytest_plugins = ("tests.studio.gui_fixtures",)


def test_the_graph_grows_while_the_gui_thread_reads_no_review(qtbot, slow_reviewer, window, monkeypatch):  # noqa: F811
    store = window.store
    game_id = _greedy_game(store, seed=7, moves=10)
    replay = window.replay
    window.show_tab("Replay")
    replay.refresh()
    replay.open_game(game_id)
    _choose(replay, "test_slow")  # 0.4 s a move

    gui = threading.current_thread()
    reads_on_gui: list[str] = []
    for name in ("get_review", "review_values"):
        real = getattr(GameStore, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            if threading.current_thread() is gui:
                reads_on_gui.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(GameStore, name, spy)

    qtbot.mouseClick(replay.reviewButton, LEFT)
    assert replay.reviewing
    # the graph shows part of the game before the review ends (handed over by the worker)
    qtbot.waitUntil(lambda: 2 <= replay.graph.n_points < 10 and replay.reviewing, timeout=20_000)
    assert "first" in replay.summaryLabel.text()
    with qtbot.waitSignal(replay.reviewed, timeout=30_000) as blocker:
        pass
    replay.wait_review()
    assert blocker.args[0].complete and replay.graph.n_points == 10
    assert reads_on_gui == []
