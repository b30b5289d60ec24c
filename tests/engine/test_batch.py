"""BatchEngine: N games at once, each identical to a Game on the same spawn stream."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import BatchEngine, Game, Rules, fast, to_exponents
from engine import _reference as ref
from engine.core import SpawnRng, spawn_tiles
from tests.engine.strategies import exponent_grids, value_grid


def _twins(engine: BatchEngine) -> list[Game]:
    return [Game(seed=int(s), rules=engine.rules) for s in engine.seeds]


def _check_lockstep(engine: BatchEngine, steps: int, actions_of=None) -> int:
    """Step the engine and one Game per game with the same actions; compare everything."""
    games = _twins(engine)
    episodes = 0
    for t in range(steps):
        actions = engine.sample_actions() if actions_of is None else actions_of(t, engine)
        mask_before = engine.legal_mask()
        obs, reward, done, mask = engine.step(actions)
        assert obs.shape == (engine.n, 4, 4) and obs.dtype == np.uint8
        assert reward.dtype == np.int64 and done.dtype == bool and mask.shape == (engine.n, 4)
        for i, g in enumerate(games):
            a = int(actions[i])
            if not mask_before[i, a]:
                assert engine.last_illegal[i] and reward[i] == 0 and not done[i]
            else:
                assert not engine.last_illegal[i]
                res = g.step(a)
                assert reward[i] == res.reward and done[i] == res.game_over
                if res.game_over:
                    episodes += 1
                    assert engine.episode_scores[i] == g.score
                    assert engine.episode_moves[i] == g.moves
                    assert engine.episode_max_tiles[i] == g.max_tile
                    assert np.array_equal(engine.final_observation(i), to_exponents(g.board))
                    # auto-reset: the next game continues the same spawn stream
                    games[i] = g = _start(engine.rules, g.rng_state)
            assert np.array_equal(obs[i], to_exponents(g.board)), (t, i)
            assert np.array_equal(mask[i], g.legal_mask())
        assert np.array_equal(engine.scores, [g.score for g in games])
        assert np.array_equal(engine.moves, [g.moves for g in games])
        assert np.array_equal(engine.rng_states, np.array([g.rng_state for g in games], dtype=np.uint64))
    return episodes


def _start(rules: Rules, rng_state: int) -> Game:
    """A new game whose start tiles come from ``rng_state`` (what auto-reset does)."""
    board = np.zeros((4, 4), np.int64)
    rng = SpawnRng(rng_state)
    spawn_tiles(board, rng, rules, rules.start_tiles)
    g = Game(rules=rules, seed=0, board=board)
    g.rng_state = rng.state
    return g


def test_games_match_single_games_through_auto_resets():
    engine = BatchEngine(6, seed=3)
    assert _check_lockstep(engine, 250) >= 6  # several games ended and restarted


def test_first_episode_is_game_seeded_with_seeds_i():
    engine = BatchEngine(4, seed=9)
    for i, s in enumerate(engine.seeds):
        assert np.array_equal(engine.boards[i], Game(seed=int(s)).board)


def test_other_spawn_rules_match_single_games():
    rules = Rules(p4=0.5, start_tiles=3, spawn_per_move=2)
    engine = BatchEngine(3, seed=1, rules=rules)
    _check_lockstep(engine, 150)


def test_illegal_actions_are_noops_with_a_flag():
    engine = BatchEngine(4, seed=0)
    engine.set_game(0, [[2, 4, 0, 0], [0] * 4, [0] * 4, [0] * 4])
    before_obs, before_score = engine.observation(), engine.scores
    actions = engine.sample_actions()
    actions[0] = 1  # left: changes nothing on game 0
    obs, reward, done, mask = engine.step(actions)
    assert engine.last_illegal.tolist() == [True, False, False, False]
    assert reward[0] == 0 and not done[0] and np.array_equal(obs[0], before_obs[0])
    assert engine.scores[0] == before_score[0] and engine.moves[0] == 0
    assert mask[0].tolist() == [False, False, True, True]


def test_mixed_legal_and_illegal_actions_match_single_games():
    def alternate(t, engine):
        return np.full(engine.n, t % 4, dtype=np.int64)  # often illegal

    _check_lockstep(BatchEngine(5, seed=4), 120, alternate)


def test_sample_actions_are_legal_and_seeded():
    a, b = BatchEngine(64, seed=5), BatchEngine(64, seed=5)
    for _ in range(50):
        acts = a.sample_actions()
        assert a.legal_mask()[np.arange(64), acts].all()
        assert np.array_equal(acts, b.sample_actions())
        oa, ob = a.step(acts), b.step(acts)
        for x, y in zip(oa, ob):
            assert np.array_equal(x, y)


def test_reset_reproduces_and_seeds_differ():
    engine = BatchEngine(8, seed=1)
    first = engine.observation()
    engine.step(engine.sample_actions())
    obs, _mask = engine.reset(seed=1)
    assert np.array_equal(obs, first) and engine.episodes == 0
    other = BatchEngine(8, seed=2)
    assert not np.array_equal(other.observation(), first)


def test_outputs_are_fresh_arrays():
    engine = BatchEngine(4, seed=0)
    obs1, _r1, _d1, _m1 = engine.step(engine.sample_actions())
    keep = obs1.copy()
    obs2, *_ = engine.step(engine.sample_actions())
    assert np.array_equal(obs1, keep) and obs1 is not obs2


def test_hand_drawn_step():
    engine = BatchEngine(1, seed=0, rules=Rules(p4=0.0))
    engine.set_game(0, [[2, 2, 2, 2], [0] * 4, [4, 0, 4, 0], [0, 0, 0, 2]], score=100)
    obs, reward, _done, _mask = engine.step(np.array([1]))
    assert reward[0] == 16 and engine.scores[0] == 116 and engine.moves[0] == 1
    values = np.where(obs[0] == 0, 0, 1 << obs[0].astype(np.int64))
    # left: [4 4 0 0] / [] / [8] / [2], plus one spawned 2 somewhere empty
    expected = np.array([[4, 4, 0, 0], [0] * 4, [8, 0, 0, 0], [2, 0, 0, 0]])
    diff = values - expected
    assert diff.sum() == 2 and (diff >= 0).all() and (expected[diff > 0] == 0).all()


def test_overflowing_game_moves_to_the_general_path_and_back():
    engine = BatchEngine(3, seed=7)
    board = [[32768, 32768, 2, 4], [4, 2, 4, 8], [0] * 4, [0] * 4]
    engine.set_game(1, board, rng_state=12345)
    twin = Game(board=board, seed=0, fast=False)
    twin.rng_state = 12345

    def play_left_then_sample(t, eng):
        acts = eng.sample_actions()
        if t == 0:
            acts[1] = 1
        return acts

    saw_big = False
    for t in range(2000):
        acts = play_left_then_sample(t, engine)
        obs, reward, done, mask = engine.step(acts)
        res = twin.step(int(acts[1]))
        assert reward[1] == res.reward and done[1] == res.game_over
        if t == 0:
            assert reward[1] == 65536 and engine.general_path_games == [1] and obs[1].max() == 16
        if res.game_over:
            assert engine.episode_max_tiles[1] == twin.max_tile >= 65536
            assert engine.episode_scores[1] == twin.score
            assert engine.final_observation(1).max() >= 16
            assert engine.general_path_games == []
            assert obs[1].max() <= 2  # a fresh game, back on the packed path
            saw_big = True
            break
        assert np.array_equal(obs[1], to_exponents(twin.board)) and np.array_equal(mask[1], twin.legal_mask())
    assert saw_big


def test_set_game_past_32768_and_reference_rewards():
    engine = BatchEngine(2, seed=0)
    engine.set_game(0, [[65536, 65536, 0, 0], [0] * 4, [0] * 4, [0] * 4])
    obs, reward, _done, _mask = engine.step(np.array([3, engine.sample_actions()[1]]))
    assert reward[0] == 131072 and obs[0].max() == 17 and engine.scores[0] == 131072


@settings(max_examples=200, deadline=None)
@given(exponent_grids(4, 4, 15), st.sampled_from([0, 1, 2, 3]))
def test_one_step_matches_reference(exps, action):
    values = value_grid(exps)
    engine = BatchEngine(1, seed=0)
    engine.set_game(0, values, rng_state=99)
    legal = ref.legal_moves(values)
    obs, reward, done, _mask = engine.step(np.array([action]))
    if action not in legal:
        assert engine.last_illegal[0] and reward[0] == 0
        assert np.array_equal(obs[0], to_exponents(np.array(values)))
        return
    moved, expected_reward = ref.move(values, action)
    state, _ = ref.spawn(moved, 99, 0.1)
    assert reward[0] == expected_reward
    if not ref.legal_moves(moved):
        assert done[0] and engine.final_observation(0).tolist() == to_exponents(np.array(moved)).tolist()
    else:
        assert not done[0] and obs[0].tolist() == to_exponents(np.array(moved)).tolist()
        assert int(engine.rng_states[0]) == state


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (np.array([0, 4]), "0 \\(up\\)"),
        (np.array([0, -1]), "0 \\(up\\)"),
        (np.array([0.0, 1.0]), "integers"),
        (np.array([0, 1, 2]), "shape"),
        ([[0, 1]], "shape"),
    ],
)
def test_bad_actions_are_clear_errors_and_change_nothing(actions, message):
    engine = BatchEngine(2, seed=0)
    before = engine.observation()
    with pytest.raises(ValueError, match=message):
        engine.step(actions)
    assert np.array_equal(engine.observation(), before) and engine.moves.tolist() == [0, 0]


def test_list_actions_are_accepted():
    engine = BatchEngine(2, seed=0)
    acts = engine.sample_actions().tolist()
    obs, *_ = engine.step(acts)
    assert obs.shape == (2, 4, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n"),
        ({"n": 2, "rules": Rules(rows=3, cols=3)}, "4x4"),
        ({"n": 2, "rules": Rules(start_tiles=0)}, "start_tiles"),
    ],
)
def test_bad_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BatchEngine(**kwargs)


def test_set_game_validates():
    engine = BatchEngine(2, seed=0)
    with pytest.raises(ValueError, match="index"):
        engine.set_game(2, np.zeros((4, 4), np.int64))
    with pytest.raises(ValueError, match="4x4"):
        engine.set_game(0, np.zeros((3, 3), np.int64))
    with pytest.raises(ValueError, match="power of two"):
        engine.set_game(0, np.full((4, 4), 3))


def test_packed_boards_and_observations_agree():
    engine = BatchEngine(16, seed=3)
    for _ in range(20):
        engine.step(engine.sample_actions())
    packed = engine.packed
    obs = engine.observation()
    for i in range(16):
        assert np.array_equal(fast.unpack_exponents(int(packed[i])), obs[i])
    assert np.array_equal(engine.boards, np.where(obs == 0, 0, 1 << obs.astype(np.int64)))
