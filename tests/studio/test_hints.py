"""Hints a player reads (issue #18): what each move gives up in words, the arrow beside the board (never
over a tile), and only the newly spawned tile marked (a ring, not a red tile), in Play and Replay."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage

from agents.base import Agent, legal_values
from agents.config import AgentConfig
from agents.hints import VALUE_KINDS, hint_texts, ordinal
from agents.spec import AgentSpec
from engine import Direction, Game, Rules, Spawn
from engine.records import GameTrace, play_recorded
from engine.store import GameRecorder
from studio.widgets.board import BoardWidget
from tests.studio.tab_fixtures import shown

pytest_plugins = ("tests.studio.gui_fixtures",)

U, L, D, R = Direction.UP, Direction.LEFT, Direction.DOWN, Direction.RIGHT
RANKED = re.compile(r"^(best|tied best|\d(st|nd|rd|th))$")  # issue 44: order only, no "% worse"


# ------------------------------------------------------------------------------------- hint texts


def test_points_say_what_each_move_costs_in_points():
    h = hint_texts({U: 1000.0, L: 760.0, D: 0.0, R: -240.0}, "points")
    assert h.texts == {U: "best", L: "−240 pts", D: "−1,000 pts", R: "−1,240 pts"}
    assert h.best is U and h.summary == "expects about 1,000 more points"
    h = hint_texts({U: 50.0, L: 49.0, R: 49.8}, "points")
    assert h.texts == {U: "best", L: "−1 pt", R: "−<1 pt"}


def test_rank_for_the_issues_expectimax_and_dqn_numbers():
    # The numbers users saw for expectimax: a rank (only the order means something), no raw sums.
    h = hint_texts({U: -91_591.0, L: -104_565.0, D: -73_897.0, R: -99_309.0}, "rank")
    assert h.best is D
    assert h.texts == {U: "2nd", L: "4th", D: "best", R: "3rd"}
    # A trained dqn: 10.0 / 9.95 / 10.0. The first of the tied best is the best (action order) ...
    h = hint_texts({U: 10.0, L: 9.95, R: 10.0}, "rank")
    assert h.texts == {U: "best", L: "3rd", R: "tied best"} and h.best is U
    # ... unless the agent chose the other one.
    h = hint_texts({U: 10.0, L: 9.95, R: 10.0}, "rank", choice=R)
    assert h.texts == {U: "tied best", L: "3rd", R: "best"} and h.best is R
    # Two moves below the best with the same value share their place.
    h = hint_texts({U: 4.0, L: 3.0, D: 3.0, R: 1.0}, "rank")
    assert h.texts == {U: "best", L: "2nd", D: "2nd", R: "4th"}
    assert h.summary == ""


def test_shares_are_percentages_with_the_best_marked():
    h = hint_texts({U: 0.62, L: 0.21, D: 0.164, R: 0.006}, "share")
    assert h.texts == {U: "best · 62 %", L: "21 %", D: "16 %", R: "0.6 %"} and h.best is U
    # Values that are not shares (negative logits) are ranked instead of shown as odd percentages.
    h = hint_texts({U: 2.0, L: -1.0}, "share")
    assert h.texts == {U: "best", L: "2nd"}


@pytest.mark.parametrize("kind", VALUE_KINDS)
def test_no_fake_preference_one_move_and_broken_values(kind):
    h = hint_texts({U: 0.25, L: 0.25, R: 0.25}, kind)
    assert h.texts == {U: "all equal", L: "all equal", R: "all equal"} and h.best is None
    h = hint_texts({L: 0.7}, kind)
    assert h.texts == {L: "only move"} and h.best is L
    h = hint_texts({U: float("nan"), L: 0.5, D: float("-inf")}, kind)
    assert h.texts[U] == "n/a" and h.texts[D] == "n/a" and h.best is L
    assert h.texts[L] == "best"
    h = hint_texts({U: float("nan")}, kind)
    assert h.texts == {U: "n/a"} and h.best is None
    assert hint_texts({}, kind).texts == {}


def test_unknown_kind_and_ordinals():
    with pytest.raises(ValueError, match="unknown kind"):
        hint_texts({U: 1.0}, "utility")
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
    ]  # fmt: skip


def test_each_agent_declares_what_its_values_are():
    from agents.registry import get_agent_class

    expected = {
        "random": "rank",
        "greedy": "rank",
        "expectimax": "rank",  # a heuristic sum, not points
        "ntuple": "points",  # reward + afterstate value: expected future score
        "td-afterstate": "rank",  # discounted log2 rewards by default
        "dqn": "rank",
        "policy": "share",
        "imitation": "share",
        "mcts": "share",  # visit shares
    }
    assert {name: get_agent_class(name).value_kind for name in expected} == expected


# ------------------------------------------------------------------------------------- Play tab


class PointsAgent(Agent):
    """Score-like values: up 1000, left 760, down 0, right -240 (expected points)."""

    name = "test_points"
    config_cls = AgentConfig
    description = "test agent with expected-points values"
    value_kind = "points"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return legal_values(game, np.array([1000.0, 760.0, 0.0, -240.0]))


class ShareAgent(PointsAgent):
    name = "test_share"
    value_kind = "share"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return legal_values(game, np.array([0.05, 0.62, 0.21, 0.12]))


@pytest.fixture
def hint_agents():
    from agents import registry

    with registry.registered(
        {
            "test_points": "tests.studio.test_hints:PointsAgent",
            "test_share": "tests.studio.test_hints:ShareAgent",
        }
    ):
        yield


def _hand_drawn(play, board) -> Game:
    """Put a hand-drawn 4x4 board in the Play tab (a fresh, not yet logged game)."""
    play.new_game(Rules(), seed=1)
    game = Game(rules=Rules(), seed=1, board=np.array(board))
    play.recorder = GameRecorder(play.store, game, lazy=True)
    play.board.set_board(game.board)
    return game


def _ask_hint(qtbot, play) -> None:
    play.last_hint = None
    qtbot.mouseClick(play.hintButton, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: play.last_hint is not None, timeout=20000)


def _shown(play) -> dict[Direction, str]:
    return {d: play.hintLabels[d][1].text() for d in Direction}


def _assert_beside_the_board(board: BoardWidget) -> None:
    arrow = board.arrow_rect()
    assert arrow is not None and QRectF(board.rect()).contains(arrow)
    assert not arrow.intersects(board.board_rect())
    rows, cols = board.board.shape
    for r in range(rows):
        for c in range(cols):
            assert not arrow.intersects(board.cell_rect(r, c))


ALL_LEGAL = [[2, 0, 0, 0], [0, 4, 0, 0], [0, 0, 8, 0], [0, 0, 0, 2]]


def test_play_tab_points_agent_shows_points_given_up(qtbot, window, hint_agents):
    play = window.play
    _hand_drawn(play, ALL_LEGAL)
    play.set_agent(AgentSpec("test_points"))
    _ask_hint(qtbot, play)
    assert _shown(play) == {U: "best", L: "−240 pts", D: "−1,000 pts", R: "−1,240 pts"}
    assert play.hint_best is U and play.board.hint is U
    assert play.hintStatus.text().startswith("test_points: ↑ up; expects about 1,000 more points")
    _assert_beside_the_board(play.board)
    # The raw value is one hover away.
    assert play.hintLabels[L][1].toolTip() == "test_points's value: 760"


def test_play_tab_share_agent_and_illegal_moves(qtbot, window, hint_agents):
    play = window.play
    # Up and left are illegal: the tiles are in the top-left corner already.
    game = _hand_drawn(play, [[4, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert list(game.legal_mask()) == [False, False, True, True]
    play.set_agent(AgentSpec("test_share"))
    _ask_hint(qtbot, play)
    # Shares of the legal moves: 0.21 and 0.12 of the agent's values are 64 % and 36 % of the two.
    assert _shown(play) == {U: "", L: "", D: "best · 64 %", R: "36 %"}
    assert play.board.hint is D
    assert not play.hintLabels[U][0].isEnabled() and play.hintLabels[D][0].isEnabled()


def test_play_tab_expectimax_hint_is_a_rank_not_raw_sums(qtbot, window):
    from agents.expectimax import ExpectimaxAgent

    board = [[2, 4, 8, 16], [4, 8, 16, 32], [0, 2, 4, 8], [0, 0, 2, 2]]
    play = window.play
    game = _hand_drawn(play, board)
    play.set_agent(AgentSpec("expectimax"))
    _ask_hint(qtbot, play)
    expected = hint_texts(ExpectimaxAgent().move_values(game), "rank")
    shown = _shown(play)
    assert shown == {d: expected.texts.get(d, "") for d in Direction}
    assert sum(t == "best" for t in shown.values()) == 1
    for d in game.legal_moves():
        assert RANKED.match(shown[d]), shown[d]  # "2nd", never "−91,591"
    assert play.board.hint is expected.best
    _assert_beside_the_board(play.board)
    # A move clears the hint: it was about the old board.
    key = {U: Qt.Key.Key_Up, L: Qt.Key.Key_Left, D: Qt.Key.Key_Down, R: Qt.Key.Key_Right}[
        game.legal_moves()[0]
    ]
    qtbot.keyClick(play.board, key)
    assert play.board.hint is None and play.board.arrow_rect() is None and _shown(play)[D] == ""


def test_play_tab_all_equal_values_point_at_nothing(qtbot, window):
    play = window.play
    _hand_drawn(play, ALL_LEGAL)
    play.set_agent(AgentSpec("random"))
    _ask_hint(qtbot, play)
    assert set(_shown(play).values()) == {"all equal"}
    assert play.hint_best is None and play.board.hint is None
    assert "no preference" in play.hintStatus.text()


def test_new_game_marks_no_tile_and_a_move_marks_only_its_spawn(qtbot, window):
    play = window.play
    play.new_game(Rules(), seed=5)
    assert play.board.marked_cells == ()  # the two start tiles are not "new"
    mask = play.recorder.game.legal_mask()
    key = next(k for k, d in ((Qt.Key.Key_Left, L), (Qt.Key.Key_Right, R), (Qt.Key.Key_Up, U)) if mask[d])
    qtbot.keyClick(play.board, key)
    (spawn,) = play.recorder.game.last_spawns
    assert play.board.marked_cells == ((spawn.row, spawn.col),)
    qtbot.waitUntil(lambda: not play.board.is_animating, timeout=2000)
    # Starting over clears the mark again.
    play.new_game(Rules(), seed=6)
    assert play.board.marked_cells == ()


# ------------------------------------------------------------------------------------- board widget


def _image(board: BoardWidget) -> QImage:
    return board.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)


def _same_pixels(a: QImage, b: QImage, rect: QRectF) -> bool:
    r = rect.toAlignedRect()
    return a.copy(r) == b.copy(r)


@pytest.mark.parametrize("direction", list(Direction))
def test_the_arrow_is_beside_the_board_and_leaves_every_tile_untouched(qtbot, direction):
    board = shown(qtbot, BoardWidget(hint_margin=True), (420, 360))
    board.set_board(np.array(ALL_LEGAL))
    without = _image(board)
    assert board.arrow_rect() is None
    board.set_hint(direction)
    _assert_beside_the_board(board)
    with_arrow = _image(board)
    # Every pixel of the board (tiles, gaps, frame) is the same with the arrow; the arrow is drawn.
    assert _same_pixels(without, with_arrow, board.board_rect())
    assert without != with_arrow
    hint = QColor(board.theme.hint_arrow)
    c = QColor(with_arrow.pixel(board.arrow_rect().center().toPoint()))
    assert abs(c.blue() - hint.blue()) < 60 and c.blue() > c.red()
    # The game-over cover hides it.
    board.show_overlay("Game over!")
    assert board.arrow_rect() is None


def test_a_board_without_the_band_makes_room_before_an_arrow(qtbot):
    board = BoardWidget()
    qtbot.addWidget(board)
    board.resize(300, 300)
    full = board.board_rect()
    board.set_hint(Direction.RIGHT)
    assert board.board_rect().width() < full.width()
    _assert_beside_the_board(board)


def test_a_spawn_is_a_ring_round_its_tile_not_a_red_tile(qtbot):
    board = shown(qtbot, BoardWidget(), (360, 360))
    b = np.array(ALL_LEGAL)
    board.set_board(b)
    plain = _image(board)
    board.set_board(b, [Spawn(1, 1, 4)])
    assert board.marked_cells == ((1, 1),)
    marked = _image(board)
    assert plain != marked
    # The tile itself (colour and number) is drawn as any other tile; the mark lies round it.
    for r in range(4):
        for c in range(4):
            assert _same_pixels(plain, marked, board.cell_rect(r, c).adjusted(2, 2, -2, -2))
    red = QColor(board.theme.last_spawn)
    for y in range(marked.height()):
        for x in range(marked.width()):
            p = QColor(marked.pixel(x, y))
            assert not (abs(p.red() - red.red()) < 40 and p.green() < 90 and p.blue() < 90), (x, y)


# ------------------------------------------------------------------------------------- Replay tab


def test_replay_marks_the_spawn_of_the_step_and_its_arrow_is_beside_the_board(qtbot, window):
    store = window.store
    game = Game(rules=Rules(), seed=8)
    trace = GameTrace.start(game)
    for _ in range(6):
        mask = game.legal_mask()
        play_recorded(game, next(d for d in (D, L, R, U) if mask[d]), trace)
    game_id = store.record_trace(trace, source="agent", agent="corner")
    record = store.load_game(game_id)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(game_id)
    replay.board.animation_ms = 0
    assert replay.position == 0 and replay.board.marked_cells == ()  # the start tiles: not new
    assert replay.board.hint is Direction(int(record.moves[0]))
    _assert_beside_the_board(replay.board)
    for i in range(3):
        qtbot.mouseClick(replay.forwardButton, Qt.MouseButton.LeftButton)
        spawned = tuple((int(r), int(c)) for r, c, v in record.spawns[i] if v)
        assert len(spawned) == 1 and replay.board.marked_cells == spawned
        _assert_beside_the_board(replay.board)
