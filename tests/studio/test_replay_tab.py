"""The Replay tab: stepping (buttons, keys, slider) reproduces the logged layouts; big games stay fast."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from engine import Direction, Game, Rules
from engine.records import GameTrace, play_recorded

# The window / settings / test-agent fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


def _record_game(store, rules: Rules, seed: int, policy=(2, 1, 3, 0), max_moves: int = 10_000) -> int:
    """Play ``policy`` in turn (first legal of it) and store the whole game; its id."""
    game = Game(rules=rules, seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and trace.n_moves < max_moves:
        mask = game.legal_mask()
        play_recorded(game, next(d for d in policy if mask[d]), trace)
    return store.record_trace(trace, source="agent", agent="corner")


def test_steps_reproduce_the_logged_layouts(qtbot, window):
    store = window.store
    game_id = _record_game(store, Rules(rows=3, cols=5, spawn_per_move=2), seed=4)
    record = store.load_game(game_id)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(game_id)
    assert replay.record.id == game_id and replay.position == 0
    assert replay.replayList.currentItem().data(Qt.ItemDataRole.UserRole) == game_id

    replay.board.animation_ms = 0
    for i in range(record.n_moves):
        assert np.array_equal(replay.board.board, record.layouts[i])
        assert replay.replaySlider.value() == i
        qtbot.mouseClick(replay.forwardButton, Qt.MouseButton.LeftButton)
    assert np.array_equal(replay.board.board, record.final_board)
    assert not replay.forwardButton.isEnabled()
    last = record.n_moves - 1
    text = replay.stepLabel.text()
    assert (
        f"Move {record.n_moves}/{record.n_moves}" in text and Direction(int(record.moves[last])).label in text
    )
    assert f"score {int(record.scores[last]):,}" in text
    # The spawns of the last move are marked on the board.
    spawned = tuple((int(r), int(c)) for r, c, v in record.spawns[last] if v)
    assert replay.board.marked_cells == spawned

    # Keys: Left / comma back, Right / period forward, Home / End.
    replay.setFocus()
    qtbot.keyClick(replay, Qt.Key.Key_Left)
    assert replay.position == record.n_moves - 1
    qtbot.keyClick(replay, Qt.Key.Key_Comma)
    assert replay.position == record.n_moves - 2
    assert np.array_equal(replay.board.board, record.layouts[record.n_moves - 2])
    qtbot.keyClick(replay, Qt.Key.Key_Period)
    qtbot.keyClick(replay, Qt.Key.Key_Right)
    assert replay.position == record.n_moves
    qtbot.keyClick(replay, Qt.Key.Key_Home)
    assert replay.position == 0

    # The slider jumps anywhere.
    for i in (5, 1, record.n_moves // 2, record.n_moves):
        replay.replaySlider.setValue(i)
        expected = record.layouts[i] if i < record.n_moves else record.final_board
        assert np.array_equal(replay.board.board, expected)


def test_play_and_pause(qtbot, window):
    game_id = _record_game(window.store, Rules(), seed=8)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(game_id)
    replay.speedCombo.setCurrentIndex(replay.speedCombo.findData(100))
    qtbot.mouseClick(replay.playButton, Qt.MouseButton.LeftButton)
    assert replay.playing
    qtbot.waitUntil(lambda: replay.position >= 10, timeout=5000)
    qtbot.mouseClick(replay.playButton, Qt.MouseButton.LeftButton)
    assert not replay.playing
    stopped = replay.position
    qtbot.wait(150)
    assert replay.position == stopped
    qtbot.waitUntil(lambda: not replay.board.is_animating, timeout=2000)
    assert np.array_equal(replay.board.board, replay.record.layouts[stopped])


def test_list_filters_and_any_board_size(qtbot, window):
    store = window.store
    a = _record_game(store, Rules(rows=2, cols=7), seed=1)
    b = _record_game(store, Rules(rows=6, cols=3), seed=2)
    replay = window.replay
    window.show_tab("Replay")
    replay.refresh()
    assert replay.replayList.count() == 2
    replay.textFilter.setText("6x3")
    visible = [replay.replayList.item(i) for i in range(2) if not replay.replayList.item(i).isHidden()]
    assert [it.data(Qt.ItemDataRole.UserRole) for it in visible] == [b]
    replay.textFilter.clear()
    replay.filterBar.source.setCurrentIndex(replay.filterBar.source.findData("human"))
    assert replay.replayList.count() == 0
    replay.open_game(a)  # clears the filter to show it
    assert replay.record.id == a and replay.board.board.shape == (2, 7)


def test_a_ten_thousand_move_game_opens_and_scrubs_to_the_right_boards(qtbot, window):
    store = window.store
    rules = Rules(rows=4, cols=4)
    rng = np.random.default_rng(0)
    n = 10_000
    # A synthetic 10,000-move record (the store does not replay traces): valid tiles, any layouts.
    layouts = [np.where(rng.random((4, 4)) < 0.5, 2 ** rng.integers(1, 12, (4, 4)), 0) for _ in range(n)]
    from engine.core import Spawn

    trace = GameTrace(
        rules=rules,
        seed=None,
        initial_board=layouts[0],
        layouts=layouts,
        moves=list(rng.integers(0, 4, n)),
        rewards=[0] * n,
        scores=list(range(n)),
        spawns=[(Spawn(0, 0, 2),)] * n,
        final_board=layouts[-1],
    )
    game_id = store.record_trace(trace, source="training")
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(game_id)
    assert replay.n_positions == n + 1

    positions = rng.integers(0, n + 1, 300)
    for i in positions:  # (speed is not asserted here: wall-clock bounds flake on a busy CI machine)
        replay.replaySlider.setValue(int(i))
        replay.board.repaint()
    assert np.array_equal(replay.board.board, replay.board_at(int(positions[-1])))


def _track_point(slider, value: int):
    """Where on ``slider``'s track the handle's centre sits at ``value`` (the style's own geometry)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QStyle, QStyleOptionSlider

    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    style = slider.style()
    groove = style.subControlRect(
        QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderGroove, slider
    )
    handle = style.subControlRect(
        QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderHandle, slider
    )
    span = groove.width() - handle.width()
    x = QStyle.sliderPositionFromValue(slider.minimum(), slider.maximum(), value, span)
    return QPoint(groove.x() + x + handle.width() // 2, groove.center().y())


def test_a_click_on_the_slider_track_jumps_to_that_move(qtbot, window):
    """Issue #33: a click on the track paged two moves towards it instead of going there."""
    store = window.store
    game_id = _record_game(store, Rules(), seed=4, max_moves=57)
    window.resize(1194, 720)
    window.show_tab("Replay")
    replay = window.replay
    replay.open_game(game_id)
    replay.board.animation_ms = 0
    slider = replay.replaySlider
    assert slider.maximum() == 57 and slider.pageStep() == 2
    for target in (40, 12, 57, 0, 33):
        handle_at = _track_point(slider, slider.value())
        point = _track_point(slider, target)
        assert abs(point.x() - handle_at.x()) > 10 or target == slider.value()  # on the track, off the handle
        qtbot.mouseClick(slider, Qt.MouseButton.LeftButton, pos=point)
        assert slider.value() == target and replay.position == target, target
        assert replay.stepLabel.text().startswith(f"Move {target}/57" if target else "Start")
