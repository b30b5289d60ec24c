"""The Play tab with real key presses on the `board` widget: moves, logging, queueing, hint, watch."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QPushButton

from agents.spec import AgentSpec
from engine import Direction, Game, Rules, slide
from engine.store import HUMAN, GameRecorder, Player
from tests.studio.gui_helpers import apply_logged, seed_with

KEYS = [
    (Qt.Key.Key_Up, Direction.UP),
    (Qt.Key.Key_W, Direction.UP),
    (Qt.Key.Key_Left, Direction.LEFT),
    (Qt.Key.Key_A, Direction.LEFT),
    (Qt.Key.Key_Down, Direction.DOWN),
    (Qt.Key.Key_S, Direction.DOWN),
    (Qt.Key.Key_Right, Direction.RIGHT),
    (Qt.Key.Key_D, Direction.RIGHT),
]

# The window / settings / test-agent fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


def test_required_object_names(window):
    from PySide6.QtWidgets import QListWidget, QSlider, QTabWidget

    tabs = window.findChild(QTabWidget, "tabs")
    assert [tabs.tabText(i) for i in range(tabs.count())] == [
        "Play",
        "Train",
        "Replay",
        "Arena",
        "Games",
        "Progress",
    ]
    assert window.findChild(QLabel, "scoreLabel") is window.play.scoreLabel
    for name in ("newGameButton", "hintButton", "autoplayButton"):
        assert window.findChild(QPushButton, name) is not None, name
    assert window.findChild(QListWidget, "replayList") is window.replay.replayList
    assert window.findChild(QSlider, "replaySlider") is window.replay.replaySlider
    from studio.widgets.board import BoardWidget

    assert window.findChild(BoardWidget, "board") is window.play.board


@pytest.mark.parametrize(("key", "direction"), KEYS, ids=[f"{k.name}" for k, _ in KEYS])
def test_key_moves_board_as_engine_slide_says_and_logs_it(qtbot, window, key, direction):
    play = window.play
    rules = Rules()
    play.new_game(rules, seed=seed_with(rules, lambda m: m[direction]))
    before = play.board.board
    assert np.array_equal(before, play.recorder.board)

    qtbot.keyClick(play.board, key)

    game_id = play.recorder.game_id
    record = window.store.load_game(game_id)
    assert record.n_moves == 1 and record.summary.source == "human"
    assert np.array_equal(record.layouts[0], before)
    assert Direction(int(record.moves[0])) is direction
    expected = apply_logged(before, direction, record.spawns[0])
    assert np.array_equal(play.recorder.board, expected)
    assert np.array_equal(play.board.board, expected)
    assert int(record.rewards[0]) == slide(before, direction)[1]
    assert play.scoreLabel.text() == str(int(record.scores[0]))
    assert play.board.marked_cells == tuple((int(r), int(c)) for r, c, v in record.spawns[0] if v)
    qtbot.waitUntil(lambda: not play.board.is_animating, timeout=2000)


def test_illegal_key_logs_nothing(qtbot, window):
    play = window.play
    rules = Rules()
    seed = seed_with(rules, lambda m: not m.all())
    play.new_game(rules, seed=seed)
    illegal = next(d for d in Direction if not play.recorder.game.legal_mask()[d])
    key = next(k for k, d in KEYS if d is illegal)
    before = play.board.board
    qtbot.keyClick(play.board, key)
    assert play.recorder.game_id is None  # nothing written: no record for a game without moves
    assert window.store.count_games() == 0
    assert np.array_equal(play.board.board, before)


def test_keys_during_an_animation_are_all_applied_in_order(qtbot, window):
    play = window.play
    play.board.animation_ms = 400  # long enough that every press below lands mid-animation
    rules = Rules(rows=5, cols=5)
    play.new_game(rules, seed=7)
    presses = [Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_A, Qt.Key.Key_W]
    qtbot.keyClick(play.board, presses[0])
    assert play.board.is_animating
    for key in presses[1:]:
        qtbot.keyClick(play.board, key)
    assert play.board.pending_transitions > 1  # they queued instead of interrupting each other

    # The same presses on a fresh game with the same seed, straight on the engine.
    ref = Game(rules=rules, seed=7)
    expected = []
    for key in presses:
        d = dict(KEYS)[key]
        if ref.legal_mask()[d]:
            ref.step(d)
            expected.append(int(d))
    record = window.store.load_game(play.recorder.game_id)
    assert [int(m) for m in record.moves] == expected
    qtbot.waitUntil(lambda: not play.board.is_animating, timeout=5000)
    assert np.array_equal(play.board.board, ref.board)
    assert play.recorder.score == ref.score


def test_game_over_overlay_and_new_game(qtbot, window):
    play = window.play
    rules = Rules(rows=2, cols=2)
    play.new_game(rules, seed=3)
    keys = [Qt.Key.Key_Up, Qt.Key.Key_Left, Qt.Key.Key_Down, Qt.Key.Key_Right]
    for i in range(200):
        if play.recorder.closed:
            break
        qtbot.keyClick(play.board, keys[i % 4])
    assert play.recorder.closed and play.board.overlay_visible
    game_id = play.recorder.game_id
    assert window.store.get_game(game_id).status == "finished"
    qtbot.mouseClick(play.board.overlay_button, Qt.MouseButton.LeftButton)
    assert not play.board.overlay_visible and not play.recorder.closed
    assert play.recorder.rules == rules


def test_new_game_dialog_validates_rules(qtbot):
    from studio.tabs.play import NewGameDialog

    dialog = NewGameDialog(Rules())
    qtbot.addWidget(dialog)
    dialog.rows.setValue(3)
    dialog.cols.setValue(5)
    dialog.p4.setValue(0.25)
    dialog.spawn.setValue(2)
    dialog.seed.setText("42")
    rules, seed = dialog.values()
    assert rules == Rules(rows=3, cols=5, p4=0.25, start_tiles=2, spawn_per_move=2) and seed == 42
    dialog.rows.setValue(1)
    dialog.cols.setValue(1)
    dialog.accept()
    assert dialog.error.isVisibleTo(dialog) and "too small" in dialog.error.text()
    assert dialog.result() != dialog.DialogCode.Accepted


def test_closing_the_window_keeps_every_move(qtbot, data_dir, qsettings):
    from engine.store import GameStore
    from studio.app import create_window

    win = create_window(data_dir, settings=qsettings)
    qtbot.addWidget(win)
    win.show()
    play = win.play
    play.new_game(Rules(), seed=11)
    made = 0
    for key in [Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_Right, Qt.Key.Key_Down] * 3:
        before = play.recorder.moves
        qtbot.keyClick(play.board, key)
        made += play.recorder.moves - before
    game_id = play.recorder.game_id
    win.close()
    with GameStore.open(data_dir) as store:
        g = store.get_game(game_id)
        assert g.n_moves == made and g.status == "abandoned"


# ------------------------------------------------------------------------------------------ agent


def test_hint_shows_values_for_legal_moves_only(qtbot, window, rater_agent):
    play = window.play
    rules = Rules()
    play.new_game(rules, seed=seed_with(rules, lambda m: not m.all()))
    play.set_agent(AgentSpec(rater_agent))
    mask = play.recorder.game.legal_mask()
    qtbot.mouseClick(play.hintButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=5000)
    # The rater's values (up 1, left 2, down 3, right 4) are not points: their order only (issue 44).
    legal = sorted((d for d in Direction if mask[d]), key=lambda d: -(d + 1))
    expected = {legal[0]: "best"}
    for place, d in zip(("2nd", "3rd", "4th"), legal[1:]):
        expected[d] = place
    for d in Direction:
        assert play.hintLabels[d][1].text() == expected.get(d, "")
    best = legal[0]
    assert play.last_hint.choice is best and play.board.hint is best
    # A move clears the hint: it was about the old board.
    qtbot.keyClick(play.board, Qt.Key.Key_Left if mask[Direction.LEFT] else Qt.Key.Key_Right)
    assert play.board.hint is None and play.last_hint is None


def test_hint_runs_off_the_gui_thread_and_stale_answers_are_dropped(qtbot, window, rater_agent):
    play = window.play
    rules = Rules()
    play.new_game(rules, seed=seed_with(rules, lambda m: m[Direction.LEFT] and m[Direction.RIGHT]))
    play.set_agent(AgentSpec("test_slow"))
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(20)
    t0 = time.perf_counter()
    play.request_hint()
    # returned at once (the agent sleeps 0.4 s on its thread); the margin is for a busy machine
    assert time.perf_counter() - t0 < 0.3
    # On a busy machine the thread may take a moment to pick the request up; a move before that
    # cancels it unstarted, and there would be no thinking to overlap with.
    qtbot.waitUntil(lambda: play.thinker.busy, timeout=5000)
    qtbot.keyClick(play.board, Qt.Key.Key_Left)  # move while it thinks: its answer is now stale
    qtbot.waitUntil(lambda: not play.thinker.busy, timeout=5000)
    qtbot.wait(100)
    timer.stop()
    # the event loop kept running while the agent thought (~20 ticks of 20 ms on an idle machine; a
    # blocked loop gets none or one, a busy machine may coalesce some)
    assert len(ticks) >= 5
    assert play.last_hint is None and play.board.hint is None


def test_watch_plays_moves_logged_as_the_agent_and_stops_on_pause(qtbot, window, rater_agent):
    play = window.play
    play.new_game(Rules(rows=5, cols=5), seed=5)
    play.set_agent(AgentSpec(rater_agent))
    play.speedSlider.setValue(play.speedSlider.maximum())
    qtbot.mouseClick(play.autoplayButton, Qt.MouseButton.LeftButton)
    assert play.watching
    qtbot.waitUntil(lambda: play.recorder.moves >= 4, timeout=10000)
    qtbot.mouseClick(play.autoplayButton, Qt.MouseButton.LeftButton)  # pause
    assert not play.watching
    paused_at = play.recorder.moves
    qtbot.wait(300)
    assert play.recorder.moves == paused_at
    agent_record = window.store.load_game(play.recorder.game_id)
    assert agent_record.summary.source == "agent" and agent_record.summary.agent == rater_agent
    assert agent_record.n_moves == paused_at

    # Step: exactly one more agent move.
    qtbot.mouseClick(play.stepButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: play.recorder.moves == paused_at + 1, timeout=5000)
    qtbot.wait(200)
    assert play.recorder.moves == paused_at + 1


def test_taking_over_from_the_agent_keeps_one_record(qtbot, window, rater_agent):
    play = window.play
    play.new_game(Rules(rows=5, cols=5), seed=9)
    play.set_agent(AgentSpec(rater_agent))
    # Two human moves, then the agent, then the person takes over with a key press; twice.
    for key in (Qt.Key.Key_Left, Qt.Key.Key_Up):
        qtbot.keyClick(play.board, key)
    players = [HUMAN, HUMAN]
    play.speedSlider.setValue(20)
    for _ in range(2):
        start = play.recorder.moves
        play.start_watching()
        qtbot.waitUntil(lambda start=start: play.recorder.moves >= start + 3, timeout=10000)
        legal = play.recorder.game.legal_mask()
        key = next(k for k, d in KEYS if legal[d])
        qtbot.keyClick(play.board, key)
        assert not play.watching
        qtbot.wait(200)  # an answer in flight when the key was pressed must not add a move
        players += [Player("agent", rater_agent)] * (play.recorder.moves - 1 - start) + [HUMAN]
    play.new_game()  # leaves the game: abandoned
    assert window.store.count_games() == 1
    (summary,) = window.store.list_games()
    record = window.store.load_game(summary.id)
    assert summary.source == "mixed" and summary.status == "abandoned" and summary.seed == 9
    assert summary.players == (HUMAN, Player("agent", rater_agent)) and summary.agent == rater_agent
    assert [record.player_of(i) for i in range(record.n_moves)] == players
    assert record.n_moves == len(players)
    # The one record is the game: its seed and moves replay it
    g = Game(rules=Rules(rows=5, cols=5), seed=9)
    for i, m in enumerate(record.moves):
        assert np.array_equal(g.board, record.layouts[i])
        g.step(int(m))
    assert np.array_equal(g.board, record.final_board)

    # The library lists it once, as mixed; Replay says who made each move.
    window.show_tab("Games")
    window.games.refresh()
    model = window.games.model
    assert model.rowCount() == 1
    assert model.data(model.index(0, 1)) == "mixed" and model.data(model.index(0, 2)) == rater_agent
    window.show_tab("Replay")
    window.replay.open_game(summary.id)
    assert "you + " + rater_agent in window.replay.titleLabel.text()
    window.replay.step_to(1)
    assert window.replay.stepLabel.text().startswith("Move 1/")
    assert "by you" in window.replay.stepLabel.text()
    first_agent_move = players.index(Player("agent", rater_agent))
    window.replay.step_to(first_agent_move + 1)
    assert f"by {rater_agent}" in window.replay.stepLabel.text()


def test_an_unseeded_game_replays_from_its_recorded_seed(qtbot, window):
    """The seed bug: a game started without a seed recorded a seed that did not reproduce it."""
    play = window.play
    play.new_game(Rules())  # no seed
    keys = [Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_Right, Qt.Key.Key_Down]
    for i in range(40):
        qtbot.keyClick(play.board, keys[i % 4])
    record = window.store.load_game(play.recorder.game_id)
    assert record.summary.seed == play.recorder.seed is not None and record.n_moves >= 10
    g = Game(rules=Rules(), seed=record.summary.seed)
    for i, m in enumerate(record.moves):
        assert np.array_equal(g.board, record.layouts[i])
        g.step(int(m))
    assert np.array_equal(g.board, play.recorder.board)


def test_hint_from_a_checkpoint_file_and_a_clear_error_for_the_wrong_board(qtbot, window, tmp_path):
    from agents.registry import create_agent

    path = create_agent("greedy", rules=Rules()).save(tmp_path / "greedy-4x4.npz")
    play = window.play
    rules = Rules()
    play.new_game(rules, seed=seed_with(rules, lambda m: not m.all()))
    play.use_checkpoint(path)
    assert play.agent_spec.checkpoint == str(path)
    play.request_hint()
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=5000)
    assert play.last_hint.agent_name == "greedy"
    assert set(play.last_hint.values) == set(play.recorder.game.legal_moves())

    # Watched moves from a checkpoint are logged with the agent's name and the file.
    qtbot.mouseClick(play.stepButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: play.recorder.moves == 1, timeout=5000)
    summary = window.store.get_game(play.recorder.game_id)
    assert (summary.source, summary.agent, summary.checkpoint) == ("agent", "greedy", str(path))

    play.new_game(Rules(rows=5, cols=5), seed=1)
    play.request_hint()
    qtbot.waitUntil(lambda: "5x5" in play.hintStatus.text(), timeout=5000)
    assert "4x4" in play.hintStatus.text() and play.last_hint is None


def test_a_move_the_store_refuses_is_not_made(data_dir):
    from engine.store import GameStore, StoreError

    class Refusing:
        """The real store, except that the third move cannot be written (disk full, say)."""

        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def log_move(self, game_id, *, index, **kw):
            if index == 2:
                raise StoreError("database error: disk I/O error")
            return self.store.log_move(game_id, index=index, **kw)

    with GameStore.open(data_dir) as store:
        s = GameRecorder(Refusing(store), rules=Rules(), seed=5, lazy=True)
        moves = [1, 0, 3, 2, 1, 0]
        made = 0
        for d in moves:
            if s.game.legal_mask()[d]:
                board, score = s.board, s.score
                try:
                    s.play(d)
                    made += 1
                except StoreError:
                    assert np.array_equal(s.board, board) and s.score == score and s.moves == made
                    break
        assert made == 2
        assert store.get_game(s.game_id).n_moves == 2


def test_a_hint_asked_mid_watch_does_not_stop_the_watch(qtbot, window, rater_agent):
    play = window.play
    play.new_game(Rules(rows=6, cols=6), seed=2)
    play.set_agent(AgentSpec(rater_agent))
    play.speedSlider.setValue(10)
    play.start_watching()
    qtbot.waitUntil(lambda: play.recorder.moves >= 2, timeout=5000)
    play.request_hint()
    at_hint = play.recorder.moves
    qtbot.waitUntil(lambda: play.recorder.moves >= at_hint + 3, timeout=10000)
    assert play.watching
    play.stop_watching()


def test_rules_without_any_move_show_the_overlay(window):
    window.play.new_game(Rules(rows=2, cols=2, start_tiles=0, spawn_per_move=0))
    assert window.play.board.overlay_visible
    window.play.new_game(Rules())
    assert not window.play.board.overlay_visible
