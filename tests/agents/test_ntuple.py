"""The n-tuple agent: features against a slow reference, TD updates by hand, training, search, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import Agent, Budget, Control
from agents.checkpoint import CheckpointError, load_checkpoint, read_checkpoint
from agents.config import ConfigError, load_preset
from agents.ntuple import LAYOUTS, NTupleAgent, NTupleConfig, TupleLayout, symmetry_cells
from agents.ntuple import kernels as K
from agents.ntuple.agent import _worker_rng_states
from agents.registry import create_agent
from engine import DIRECTIONS, Direction, Game, Rules, slide
from engine.core import SpawnRng, seed_to_state, spawn_tiles, to_exponents
from engine.fast import pack, pack_exponents, unpack
from tests.agents.checkpoint_checks import assert_same_play

# ----------------------------------------------------------------------------------- slow references


def ref_transform(exps: np.ndarray, s: int) -> np.ndarray:
    """Symmetry s = k + 4 f of a 4x4 array: rotate k quarter turns (np.rot90), then mirror if f."""
    out = np.rot90(exps, s % 4)
    return np.fliplr(out) if s >= 4 else out


def ref_features(exps: np.ndarray, tuples: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """Tuple indices read off the 8 transformed boards, cell p of the tuple = nibble i of the index."""
    out = np.zeros((len(tuples), 8), dtype=np.int64)
    for s in range(8):
        flat = ref_transform(exps, s).ravel()
        for t, cells in enumerate(tuples):
            out[t, s] = sum(int(flat[p]) << (4 * i) for i, p in enumerate(cells))
    return out


def ref_value(w: np.ndarray, exps: np.ndarray, layout: TupleLayout) -> float:
    offsets = np.concatenate([[0], np.cumsum([16 ** len(t) for t in layout.tuples])[:-1]])
    f = ref_features(exps, layout.tuples)
    # float64 accumulation, as the kernel does (a sum of np.float32 would round at every step)
    return sum(float(w[offsets[t] + f[t, s]]) for t in range(len(layout.tuples)) for s in range(8))


def random_exps(rng: np.random.Generator, high: int = 16) -> np.ndarray:
    exps = rng.integers(0, high, size=(4, 4))
    exps[rng.random((4, 4)) < 0.3] = 0
    return exps.astype(np.uint8)


def tiny(**kw) -> NTupleAgent:
    return NTupleAgent(NTupleConfig(layout="4x4", **kw), seed=7)


# ------------------------------------------------------------------------------------------ features


def test_symmetry_cells_are_the_eight_symmetries():
    maps = {tuple(symmetry_cells(s)) for s in range(8)}
    assert len(maps) == 8
    assert tuple(symmetry_cells(0)) == tuple(range(16))
    # quarter turn (np.rot90: the top row becomes the left column, read bottom-up... as numpy defines it)
    assert list(symmetry_cells(1)[:4]) == [3, 7, 11, 15]
    assert list(symmetry_cells(4)[:4]) == [3, 2, 1, 0]  # mirror only


def test_hand_drawn_features():
    # row 0 = 2 4 8 16, the rest empty except a 2048 at the bottom-right corner
    values = np.array([[2, 4, 8, 16], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2048]])
    layout = TupleLayout("rows", ((0, 1, 2, 3),))
    sh, tlen, _, _ = layout.arrays()
    f = K.features(np.uint64(pack(values)), sh, tlen)
    assert f[0, 0] == 0x4321  # identity: cells 0..3 hold exponents 1, 2, 3, 4
    assert f[0, 4] == 0x1234  # mirrored: the row read right to left
    assert f[0, 2] == 0x000B  # half turn: the bottom row reversed, 2048 (exponent 11) first
    assert sorted(f[0]) == sorted(ref_features(to_exponents(values), layout.tuples)[0])


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_features_match_slow_reference_on_random_boards(name):
    layout = TupleLayout(name, LAYOUTS[name])
    sh, tlen, _, _ = layout.arrays()
    rng = np.random.default_rng(3)
    for _ in range(60):
        exps = random_exps(rng)
        got = K.features(np.uint64(pack_exponents(exps)), sh, tlen)
        np.testing.assert_array_equal(got, ref_features(exps, layout.tuples))


def test_symmetric_views_are_the_symmetry_cells_maps():
    # the bit tricks behind the fast indexing against the numpy definition of the 8 symmetries
    rng = np.random.default_rng(11)
    for _ in range(50):
        exps = random_exps(rng)
        views = K.symmetries(np.uint64(pack_exponents(exps)))
        for s in range(8):
            want = exps.ravel()[symmetry_cells(s)].reshape(4, 4)
            assert int(views[s]) == pack_exponents(want), s


def test_any_cell_order_reads_the_same_features_as_the_reference():
    # runs are built from neighbouring cells: unsorted, reversed and single-cell tuples must all work
    tuples = ((5, 3, 4, 0), (15, 14, 13, 12, 11, 10), (9,), (1, 2, 3, 7, 8, 9, 10, 0))
    layout = TupleLayout("odd", tuples)
    runs, tlen, _, _ = layout.arrays()
    assert list(runs[:, 0]) == [3, 6, 1, 3]  # (5) (3,4) (0); every cell alone; (9); (1,2,3) (7..10) (0)
    rng = np.random.default_rng(12)
    for _ in range(40):
        exps = random_exps(rng)
        got = K.features(np.uint64(pack_exponents(exps)), runs, tlen)
        np.testing.assert_array_equal(got, ref_features(exps, tuples))


def test_value_is_symmetric_and_matches_reference():
    layout = TupleLayout("2x6+2x4", LAYOUTS["2x6+2x4"])
    sh, tlen, toff, thr = layout.arrays()
    rng = np.random.default_rng(5)
    w = rng.standard_normal(layout.size).astype(np.float32)
    for _ in range(20):
        exps = random_exps(rng)
        v = K.evaluate(w, np.uint64(pack_exponents(exps)), sh, tlen, toff, layout.stage_size, thr, 1)
        assert v == pytest.approx(ref_value(w, exps, layout), rel=1e-5, abs=1e-4)
        for s in range(8):
            vs = K.evaluate(
                w,
                np.uint64(pack_exponents(ref_transform(exps, s))),
                sh,
                tlen,
                toff,
                layout.stage_size,
                thr,
                1,
            )
            assert vs == pytest.approx(v, rel=1e-5, abs=1e-4)


# ------------------------------------------------------------------------------------------ TD update


def _one_cell_layout() -> tuple[TupleLayout, tuple]:
    # One tuple of one corner cell: its 8 symmetric views are the 4 corners, each seen twice.
    layout = TupleLayout("corner", ((0,),))
    sh, tlen, toff, thr = layout.arrays()
    return layout, (sh, tlen, toff, layout.stage_size, thr, 1)


def test_td_update_by_hand_plain():
    _, net = _one_cell_layout()
    w = np.zeros(16, dtype=np.float32)
    dummy = np.zeros(1, dtype=np.float32)
    # corners hold exponents 1 (2), 2 (4), 3 (8) and 0 (empty)
    exps = np.zeros((4, 4), dtype=np.uint8)
    exps[0, 0], exps[0, 3], exps[3, 3] = 1, 2, 3
    b = np.uint64(pack_exponents(exps))
    # step alpha/8 = 0.5/8; delta 8: each feature gets +0.5, each corner weight is hit twice -> 1.0
    v_new = K.td_update(w, dummy, False, b, 8.0, 0.5 / 8, *net)
    np.testing.assert_allclose(w[[0, 1, 2, 3]], [1.0, 1.0, 1.0, 1.0])
    assert w[4:].sum() == 0.0
    assert K.evaluate(w, b, *net) == pytest.approx(8.0)
    # the returned value is V after the whole update (not a running sum, which would read 6 here)
    assert v_new == pytest.approx(8.0)


def test_td_update_by_hand_temporal_coherence():
    _, net = _one_cell_layout()
    w = np.zeros(16, dtype=np.float32)
    tc = np.zeros(32, dtype=np.float32)  # the kernels' layout: error sum, |error| sum side by side
    e, a = tc[0::2], tc[1::2]
    exps = np.zeros((4, 4), dtype=np.uint8)
    exps[0, 0] = exps[0, 3] = exps[3, 0] = exps[3, 3] = 5  # all 8 views hit weight 5
    b = np.uint64(pack_exponents(exps))
    step = 1.0 / 8
    # first update, delta +4: every hit has |E|/A = 1 (A = 0 counts as 1): w += 8 * 4/8 = 4
    K.td_update(w, tc, True, b, 4.0, step, *net)
    assert (w[5], e[5], a[5]) == (4.0, 32.0, 32.0)
    # second, delta -4: the first hit still has rate 32/32 = 1, then E/A shrink:
    # rates 1, 28/36, 24/40, 20/44, 16/48, 12/52, 8/56, 4/60
    K.td_update(w, tc, True, b, -4.0, step, *net)
    rates = [1, 28 / 36, 24 / 40, 20 / 44, 16 / 48, 12 / 52, 8 / 56, 4 / 60]
    assert w[5] == pytest.approx(4.0 - 0.5 * sum(rates), rel=1e-6)
    assert (e[5], a[5]) == (0.0, 64.0)


def ref_train_games(layout: TupleLayout, alpha: float, seed: int, games: int) -> tuple[np.ndarray, list[int]]:
    """A slow, plain-Python TD(0) afterstate learner (no TC): greedy play, backward updates per game."""
    w = np.zeros(layout.size, dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum([16 ** len(t) for t in layout.tuples])[:-1]])
    n_feat = 8 * len(layout.tuples)
    rng = SpawnRng(seed_to_state(seed))
    rules = Rules()
    scores = []

    def value(exps):
        return ref_value(w, exps, layout)

    for _ in range(games):
        board = np.zeros((4, 4), dtype=np.int64)
        spawn_tiles(board, rng, rules, 2)
        afters, rewards, score = [], [], 0
        while True:
            best = None
            for d in DIRECTIONS:
                after, r = slide(board, d)
                if np.array_equal(after, board):
                    continue
                v = r + value(to_exponents(after))
                if best is None or v > best[0]:
                    best = (v, after, r)
            if best is None:
                break
            _, after, r = best
            afters.append(to_exponents(after))
            rewards.append(r)
            score += r
            board = after.copy()
            spawn_tiles(board, rng, rules, 1)
        target = 0.0
        for exps, r in zip(reversed(afters), reversed(rewards)):
            delta = target - value(exps)
            f = ref_features(exps, layout.tuples)
            for t in range(len(layout.tuples)):
                for s in range(8):
                    w[offsets[t] + f[t, s]] += np.float32(alpha / n_feat * delta)
            target = r + value(exps)
        scores.append(score)
    return w, scores


def test_training_matches_slow_reference_learner():
    agent = NTupleAgent(NTupleConfig(layout="4x4", lr=0.1, tc=False, lam=0.0, restart=0.0), seed=11)
    events = list(agent.train(Budget(episodes=3)))
    w_ref, scores_ref = ref_train_games(agent.layout, 0.1, 11, 3)
    scores = [ev.metrics["score"] * ev.metrics["games"] for ev in events if ev.metrics["games"]]
    assert sum(scores) == pytest.approx(sum(scores_ref))
    assert agent.counters.episodes == 3
    np.testing.assert_allclose(agent.weights, w_ref, rtol=1e-4, atol=1e-3)
    assert np.abs(w_ref).sum() > 0


# ------------------------------------------------------------------------------------------ training


def test_determinism_same_seed_same_numbers():
    runs = []
    for _ in range(2):
        agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=5)
        events = list(agent.train(Budget(episodes=40)))
        runs.append((agent.weights.copy(), [ev.metrics.get("score") for ev in events], agent.counters.steps))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][2] == runs[1][2]
    other = NTupleAgent(NTupleConfig(layout="4x4"), seed=6)
    list(other.train(Budget(episodes=40)))
    assert not np.array_equal(other.weights, runs[0][0])


def test_smoke_training_learns_and_reports():
    agent = NTupleAgent(NTupleConfig(layout="4x4", window=200), seed=1)
    events = list(agent.train(Budget(episodes=600)))
    assert agent.counters.episodes == 600
    assert sum(ev.metrics["games"] for ev in events) == 600
    last = [ev for ev in events if ev.kind == "episode"][-1].metrics
    for key in (
        "score",
        "max_tile",
        "moves",
        "mean_score",
        "rate_2048",  # larger tiles' rates come once a game reaches them (issue 44)
        "lr",
        "steps_per_s",
        "td_error",
    ):
        assert key in last, key
    # random play averages ~1,100 points; 600 games of TD learning is several times that
    assert last["mean_score"] > 3000
    assert last["lr"] == 1.0 and last["steps_per_s"] > 0
    assert events[-1].board is not None and events[-1].board.shape == (4, 4)
    assert agent.counters.steps == events[-1].step


def test_budget_steps_is_exact_and_stop_is_honoured():
    agent = tiny()
    list(agent.train(Budget(steps=12345)))
    assert agent.counters.steps == 12345
    control = Control()
    gen = agent.train(Budget(seconds=60), control)
    next(gen)
    control.stop()
    assert list(gen) == []


def test_restarts_replay_the_second_half_and_stay_out_of_the_stats():
    agent = NTupleAgent(NTupleConfig(layout="4x4", restart=0.9, window=100_000), seed=4)
    events = list(agent.train(Budget(episodes=200)))
    restarted = sum(ev.metrics.get("restarted_games", 0) for ev in events)
    assert 100 < restarted < 200  # ~90 % of the games after a fresh one... chains included
    assert agent._recent.shape[0] == 200 - restarted  # only games from the initial position count
    plain = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0), seed=4)
    assert all("restarted_games" not in ev.metrics for ev in plain.train(Budget(episodes=20)))


def test_restart_one_replays_every_game_of_20_moves_or_more_from_its_middle():
    # restart = 1 is the C++ trainer's rule: no coin, every long enough game is replayed from its middle
    layout = TupleLayout("4x4", LAYOUTS["4x4"])
    sh, tlen, toff, thr = layout.arrays()
    w, tc = np.zeros(layout.size, dtype=np.float32), np.zeros(2 * layout.size, dtype=np.float32)
    gu = np.array([0, seed_to_state(5), seed_to_state(6)], dtype=np.uint64)
    gi = np.zeros(7, dtype=np.int64)
    board, after, reward = (np.zeros(30_000, dtype=t) for t in (np.uint64, np.uint64, np.float32))
    score, maxexp, moves, restarted = (np.zeros(300, dtype=t) for t in (np.int64, np.int8, np.int64, np.int8))
    head = (w, tc, True, sh, tlen, toff, layout.stage_size, thr, 1.0, 0.5, 1.0, 0.1, 2, np.array([1]))
    done, _ = K.train_steps(
        *head, gu, gi, board, after, reward, 10**7, score, maxexp, moves, restarted, np.zeros(2)
    )
    assert done == 300 and restarted[0] == 0
    follows_long = moves[:-1] >= 20
    np.testing.assert_array_equal(restarted[1:] == 1, follows_long)  # a replay exactly after each long one
    assert 0 < (restarted == 0).sum() < 150  # chains of replays: most games are replays


def test_multi_stage_promotion():
    agent = NTupleAgent(NTupleConfig(layout="4x4", stage_tiles=(64,)), seed=2)
    assert agent.layout.n_stages == 2
    list(agent.train(Budget(episodes=30)))
    assert agent.n_live == 2  # every game reaches 64
    stage = agent.layout.stage_size
    assert np.abs(agent.weights[stage:]).sum() > 0
    assert not np.array_equal(agent.weights[:stage], agent.weights[stage:])


def one_worker_both_ways(steps: int, room: int, *search: int) -> int:
    """Trains one worker of a tiny network through ``train_steps`` and through the threaded wrapper
    with one row (search settings ``search`` handed on when given), asserts the two give the same
    bits, and returns the games it finished."""
    layout = TupleLayout("4x4", LAYOUTS["4x4"])
    sh, tlen, toff, thr = layout.arrays()
    outs = []
    for parallel in (False, True):
        w, tc = np.zeros(layout.size, dtype=np.float32), np.zeros(2 * layout.size, dtype=np.float32)
        gu = np.array([[0, seed_to_state(3), seed_to_state(4)]], dtype=np.uint64)
        gi = np.zeros((1, K.I_COLS), dtype=np.int64)
        bufs = [np.zeros((1, steps + 10_000), dtype=t) for t in (np.uint64, np.uint64, np.float32)]
        res = [np.zeros((1, room), dtype=t) for t in (np.int64, np.int8, np.int64, np.int8)]
        acc = np.zeros((1, 2))
        head = (w, tc, True, sh, tlen, toff, layout.stage_size, thr, 1.0, 0.5, 0.5, 0.1, 2, np.array([1]))
        if parallel:
            result = np.zeros((1, 2), dtype=np.int64)
            K.train_steps_parallel(
                *head, gu, gi, *bufs, np.array([steps]), np.array([room]), *res, acc, result, *search
            )
            done_steps = (int(result[0, 0]), int(result[0, 1]))
        else:
            done_steps = K.train_steps(
                *head, gu[0], gi[0], *(x[0] for x in bufs), steps, *(x[0] for x in res), acc[0], *search
            )
        outs.append((done_steps, w, tc, gu, gi, *res, acc))
    assert outs[0][0] == outs[1][0]
    for x, y in zip(outs[0][1:], outs[1][1:], strict=True):
        np.testing.assert_array_equal(x, y)
    return outs[0][0][0]


def test_parallel_kernel_with_one_worker_is_the_single_threaded_kernel():
    # the threaded wrapper only hands rows to train_steps: one row must give the same bits
    assert one_worker_both_ways(20_000, 100) > 5


def test_two_workers_learn_into_one_network():
    agent = NTupleAgent(NTupleConfig(layout="4x4", threads=2, window=200), seed=1)
    assert agent._game_u[0, 1] != agent._game_u[1, 1]  # the workers play different games
    events = list(agent.train(Budget(episodes=601)))
    assert agent.counters.episodes == 601 == sum(ev.metrics["games"] for ev in events)
    assert agent.counters.steps == events[-1].step
    assert [ev for ev in events if ev.kind == "episode"][-1].metrics["mean_score"] > 3000
    list(agent.train(Budget(steps=12_345)))  # shared out: the workers end on it exactly
    assert agent.counters.steps == events[-1].step + 12_345
    single = NTupleAgent(NTupleConfig(layout="4x4", threads=1), seed=1)
    list(single.train(Budget(episodes=601)))
    assert not np.array_equal(single.weights, agent.weights)  # the second worker's games are in there


def test_two_workers_train_from_a_background_thread():
    # the GUI trains in a QThread: numba's thread pool must work from a thread that is not the main one
    import threading

    agent = NTupleAgent(NTupleConfig(layout="4x4", threads=2), seed=3)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            list(agent.train(Budget(episodes=50)))
        except BaseException as e:  # reported by the assert below (a thread swallows it otherwise)
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    assert not t.is_alive() and not errors
    assert agent.counters.episodes == 50


def test_two_workers_promote_a_stage_once_and_keep_their_streams(tmp_path):
    agent = NTupleAgent(NTupleConfig(layout="4x4", stage_tiles=(64,), threads=2), seed=2)
    list(agent.train(Budget(episodes=30)))
    assert agent.n_live == 2
    stage = agent.layout.stage_size
    assert np.abs(agent.weights[stage:]).sum() > 0
    loaded = Agent.load(agent.save(tmp_path / "two"))
    assert isinstance(loaded, NTupleAgent) and loaded.n_live == 2
    np.testing.assert_array_equal(loaded._game_u[:, 1:], agent._game_u[:, 1:])
    # resumed with one worker more: the new worker gets a stream of its own
    arrays, meta = agent.get_state()
    three = NTupleAgent(NTupleConfig(layout="4x4", stage_tiles=(64,), threads=3), seed=2)
    three.set_state(arrays, meta)
    np.testing.assert_array_equal(three._game_u[:2, 1:], agent._game_u[:, 1:])
    assert len({int(x) for x in three._game_u[:, 1]}) == 3
    list(three.train(Budget(episodes=10)))
    assert three.counters.episodes == 10


def test_the_threads_setting_changed_after_the_agent_was_made_takes_effect(tmp_path):
    # a checkpoint loads with the threads it was trained with; `--set threads=1` (continue_ntuple.py)
    # or `bench ntuple -o checkpoint=CK -o threads=N` changes the setting on the loaded agent
    made_with_two = NTupleAgent(NTupleConfig(layout="4x4", threads=2), seed=4)
    made_with_two.config.threads = 1
    list(made_with_two.train(Budget(steps=3000)))
    one = NTupleAgent(NTupleConfig(layout="4x4", threads=1), seed=4)
    list(one.train(Budget(steps=3000)))
    # worker 0 has the agent's seed: one worker plays exactly a one-thread agent's games
    np.testing.assert_array_equal(made_with_two.weights, one.weights)
    assert made_with_two.counters.episodes == one.counters.episodes
    assert made_with_two._game_u.shape[0] == 1

    one.config.threads = 3
    events = list(one.train(Budget(episodes=40)))
    assert one.counters.episodes == 40 + made_with_two.counters.episodes
    assert sum(ev.metrics["games"] for ev in events) == 40
    streams = {int(x) for x in one._game_u[:, 1]}
    assert one._game_u.shape[0] == 3 and len(streams) == 3  # the added workers play games of their own
    _, meta = one.get_state()
    assert len(meta["worker_rng_states"]) == 2  # and a checkpoint keeps their streams
    # seeded from the seed and the moves made so far (not random, not a replay of worker k's start)
    again = NTupleAgent(NTupleConfig(layout="4x4", threads=1), seed=4)
    list(again.train(Budget(steps=3000)))
    again.config.threads = 3
    again._match_workers()
    for k in (1, 2):
        assert [int(x) for x in again._game_u[k, 1:]] == [int(x) for x in _worker_rng_states(4 + 3000, k)]
        assert again._game_u[k, 0] == 0 and not again._game_i[k].any()  # no game in progress yet


# ------------------------------------------------------------------------------------------ play


def ref_downgrade(values: np.ndarray, from_tile: int) -> np.ndarray:
    """Tile downgrading on tile values, the slow way: halve every tile above the largest missing one."""
    if not from_tile or values.max() < from_tile:
        return values
    present = set(values.ravel().tolist())
    hole = int(values.max()) // 2
    while hole >= 2 and hole in present:
        hole //= 2
    return values if hole < 2 else np.where(values > hole, values // 2, values)


def ref_search(
    agent: NTupleAgent, values: np.ndarray, depth: int, p4: float, dg: int = 0
) -> dict[int, float]:
    """Expectimax by enumeration on value boards: max over moves, mean over spawns, V at the leaves
    (of the downgraded afterstate when ``dg`` is a tile)."""

    def max_node(board, level):
        out = {}
        for d in DIRECTIONS:
            after, r = slide(board, d)
            if np.array_equal(after, board):
                continue
            if level >= depth:
                out[d] = r + agent.value(ref_downgrade(after, dg))
            else:
                empties = list(zip(*np.nonzero(after == 0)))
                acc = 0.0
                for rc in empties:
                    for tile, p in ((2, 1 - p4), (4, p4)):
                        child = after.copy()
                        child[rc] = tile
                        sub = max_node(child, level + 1)
                        acc += p * (max(sub.values()) if sub else 0.0)
                out[d] = r + acc / len(empties)
        return out

    return max_node(values, 1)


def trained_tiny(seed: int = 3, games: int = 200, **kw) -> NTupleAgent:
    agent = NTupleAgent(NTupleConfig(layout="4x4", **kw), seed=seed)
    list(agent.train(Budget(episodes=games)))
    return agent


def test_expectimax_by_hand_with_zero_weights():
    # V = 0 everywhere: a move is worth its reward plus the expected best reward after the spawn.
    board = np.array([[2, 2, 4, 8], [4, 8, 16, 32], [8, 16, 32, 64], [16, 32, 64, 128]])
    agent = NTupleAgent(NTupleConfig(layout="4x4", search_depth=2), seed=0)
    got = agent.move_values(Game(board=board))
    # Only row 0 can change: up / down are illegal.
    # left: row 0 -> [4 4 8 _] (reward 4), one empty cell (0,3).
    #   2 there (p 0.9): [4 4 8 2]; best next reward 8 (left merges 4+4, so does up in column 0).
    #   4 there (p 0.1): [4 4 8 4]; best next reward 8 again (4+4).   -> 4 + 0.9*8 + 0.1*8 = 12
    assert got[Direction.LEFT] == pytest.approx(12.0)
    # right: row 0 -> [_ 4 4 8] (reward 4), empty cell (0,0).
    #   2: [2 4 4 8] -> left merges 4+4: 8.   4: [4 4 4 8] -> 8 (one pair of 4s merges).  -> 12
    assert got[Direction.RIGHT] == pytest.approx(12.0)
    assert set(got) == {Direction.LEFT, Direction.RIGHT}
    # depth 1 is the reward alone
    agent.config = NTupleConfig(layout="4x4", search_depth=1)
    assert agent.move_values(Game(board=board)) == {Direction.LEFT: 4.0, Direction.RIGHT: 4.0}


@pytest.mark.parametrize(("depth", "empty"), [(1, 8), (2, 4), (3, 2)])
def test_search_matches_enumeration(depth, empty):
    agent = trained_tiny(search_depth=depth)
    rng = np.random.default_rng(depth)
    checked = 0
    while checked < 4:
        exps = rng.integers(1, 8, size=16).astype(np.uint8)
        exps[rng.choice(16, size=empty, replace=False)] = 0
        values = np.where(exps == 0, 0, 1 << exps.astype(np.int64)).reshape(4, 4)
        g = Game(board=values)
        if g.game_over:
            continue
        got = agent.move_values(g)
        ref = ref_search(agent, values, depth, 0.1)
        assert set(got) == set(ref)
        for d in got:
            assert got[d] == pytest.approx(ref[d], rel=1e-5, abs=1e-3)
        checked += 1


def test_downgrade_by_hand():
    b = np.array([[16384, 8192, 4096, 1024], [2, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    down = np.array([[8192, 4096, 2048, 1024], [2, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])  # 2048 was missing

    def kernel(values, from_tile):
        cfg = NTupleConfig(layout="4x4", downgrade_from=from_tile)
        return unpack(int(K.downgrade(np.uint64(pack(values)), cfg.downgrade_exponent())))

    np.testing.assert_array_equal(kernel(b, 16384), down)
    np.testing.assert_array_equal(kernel(b, 8192), down)
    np.testing.assert_array_equal(kernel(b, 32768), b)  # not there yet
    np.testing.assert_array_equal(kernel(b, 0), b)  # off
    full = np.array([[16, 8, 4, 2], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(kernel(full, 16), full)  # no missing tile below 16: as it is
    hole_at_2 = np.array([[16, 8, 4, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(kernel(hole_at_2, 16), [[8, 4, 2, 0]] + [[0] * 4] * 3)
    with pytest.raises(ConfigError, match="downgrade_from"):
        NTupleConfig(downgrade_from=100)


def test_downgrade_matches_slow_reference_on_random_boards():
    rng = np.random.default_rng(5)
    for _ in range(300):
        exps = random_exps(rng)
        values = np.where(exps == 0, 0, 1 << exps.astype(np.int64))
        for from_exp in (0, 5, 9, 13):
            got = unpack(int(K.downgrade(np.uint64(pack_exponents(exps)), from_exp)))
            np.testing.assert_array_equal(got, ref_downgrade(values, 1 << from_exp if from_exp else 0))


@pytest.mark.parametrize("depth", [1, 2])
def test_search_with_downgrade_matches_enumeration(depth):
    agent = trained_tiny(search_depth=depth, downgrade_from=64)
    rng = np.random.default_rng(10 + depth)
    checked = downgraded = 0
    while checked < 6:
        exps = rng.integers(1, 8, size=16).astype(np.uint8)
        exps[rng.choice(16, size=5, replace=False)] = 0
        values = np.where(exps == 0, 0, 1 << exps.astype(np.int64)).reshape(4, 4)
        g = Game(board=values)
        if g.game_over:
            continue
        got = agent.move_values(g)
        ref = ref_search(agent, values, depth, 0.1, dg=64)
        assert set(got) == set(ref)
        for d in got:
            assert got[d] == pytest.approx(ref[d], rel=1e-5, abs=1e-3)
        downgraded += not np.array_equal(ref_downgrade(values, 64), values)
        checked += 1
    assert downgraded >= 2  # the boards did exercise it
    # and the jitted games are the games act plays
    res = agent.play_fast(2, seed=80)
    for i in range(2):
        game = Game(seed=80 + i)
        while not game.game_over:
            game.step(agent.act(game))
        assert (game.score, game.moves) == (res["score"][i], res["moves"][i])


def test_depths_policy_switches_depth_by_free_cells():
    agent = trained_tiny()
    # depth 2 with 0-1 free cells, 1 otherwise
    pol = NTupleAgent(NTupleConfig(layout="4x4", depths_policy=(2, 2, 1)), seed=0)
    pol.set_state(*agent.get_state())
    full = np.array([[2, 4, 8, 16], [32, 64, 128, 256], [2, 4, 8, 16], [32, 64, 128, 0]])
    roomy = np.array([[2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 8, 0], [0, 0, 0, 0]])
    for board, depth in ((full, 2), (roomy, 1)):
        ref = ref_search(pol, board, depth, 0.1)
        got = pol.move_values(Game(board=board))
        for d in got:
            assert got[d] == pytest.approx(ref[d], rel=1e-5, abs=1e-3)


def test_play_fast_is_the_game_played_through_act():
    agent = trained_tiny(games=100)
    res = agent.play_fast(2, seed=40)
    for i in range(2):
        g = Game(seed=40 + i)
        while not g.game_over:
            g.step(agent.act(g))
        assert g.score == res["score"][i]
        assert g.moves == res["moves"][i]
        assert g.max_tile == res["max_tile"][i]


@pytest.mark.parametrize("depth", [1, 2])
def test_play_fast_on_threads_plays_the_same_games(depth):
    agent = trained_tiny(games=100, search_depth=depth)
    one = agent.play_fast(5, seed=70)
    three = agent.play_fast(5, seed=70, threads=3)  # more threads than cores is fine, and uneven shares
    for key in ("score", "max_tile", "moves"):
        np.testing.assert_array_equal(one[key], three[key])
    assert len(set(one["score"].tolist())) > 1
    with pytest.raises(ValueError, match="threads"):
        agent.play_fast(1, threads=0)


def test_play_fast_at_3_ply_is_the_game_played_through_act():
    # play_fast reuses one search scratch and one table stamp for every move of the call; act
    # searches each move afresh: the same games move for move
    agent = trained_tiny(games=100, search_depth=3)
    res = agent.play_fast(1, seed=41)
    g = Game(seed=41)
    while not g.game_over:
        g.step(agent.act(g))
    assert (g.score, g.moves, g.max_tile) == (res["score"][0], res["moves"][0], res["max_tile"][0])
    assert g.moves > 50


@pytest.mark.parametrize(("depth", "levels"), [(2, set()), (3, {2}), (4, {2, 3})])
def test_search_table_holds_no_root_afterstates(depth, levels):
    # A root afterstate never comes back (other root moves make other boards, later roots have a
    # larger tile sum), so the search neither probes nor fills the table at level 1: a 2-ply search
    # leaves it untouched, deeper ones store only their inner chance nodes.
    agent = trained_tiny(games=50)
    board = np.array([[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]])
    tt = [
        np.zeros(1 << 12, np.uint64),
        np.zeros(1 << 12, np.int64),
        np.zeros(1 << 12, np.int64),
        np.zeros(1 << 12),
    ]
    out = K.search_values(
        agent.weights, np.uint64(pack(board)), np.array([depth]), 0.1, *agent._net(), 0, *tt, 7
    )
    stamped = tt[2] == 7
    assert set(tt[1][stamped].tolist()) == levels
    if depth == 3:
        # one entry per distinct afterstate of a level-2 max node: every spawn after every root move
        afters = set()
        for d in DIRECTIONS:
            a, _ = slide(board, d)
            if np.array_equal(a, board):
                continue
            for r, c in zip(*np.nonzero(a == 0), strict=True):
                for tile in (2, 4):
                    child = a.copy()
                    child[r, c] = tile
                    for d2 in DIRECTIONS:
                        a2, _ = slide(child, d2)
                        if not np.array_equal(a2, child):
                            afters.add(pack(a2))
        assert int(stamped.sum()) <= len(afters)
        assert int(stamped.sum()) >= len(afters) - 40  # a few slots collide in 4,096
    if depth <= 3:  # the enumeration of 4-ply takes long
        for d, v in ref_search(agent, board, depth, 0.1).items():
            assert out[d] == pytest.approx(v, rel=1e-5, abs=1e-3)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_search_positions_chooses_the_moves_act_makes(depth):
    # boards searched one after another (bench ntuple's same-boards timing): the afterstate of the move
    # act makes on each, and the board itself where no move is left
    agent = trained_tiny(games=50, search_depth=depth)
    game = Game(seed=12)
    boards, expected = [], []
    while not game.game_over and len(boards) < 60:
        boards.append(pack(game.board))
        d = agent.act(game)
        after, _ = slide(game.board, d)
        expected.append(pack(after))
        game.step(d)
    lost = np.array([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]])
    boards.append(pack(lost))
    expected.append(pack(lost))
    got = agent.search_positions(np.array(boards, dtype=np.uint64))
    assert got.tolist() == expected


@pytest.mark.parametrize("dg", [0, 3])  # 3: leaves with a 16 are read downgraded
def test_leaf_cache_holds_exact_values_and_is_read(dg):
    # The search keeps V(leaf afterstate) in a small cache of its scratch (most leaves of a deep
    # search repeat: tiles spawned on different cells of a line slide to the same place). Every value
    # there is the evaluation itself, bit for bit; a second search on the same scratch reads them.
    agent = trained_tiny(games=50)
    board = np.array([[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]])
    b = np.uint64(pack(board))
    policy = np.array([3])
    tt = agent._table()
    scratch = K.search_scratch(policy, len(agent.layout.tuples))
    out, lc_key, lc_val = scratch[0], scratch[-2], scratch[-1]
    K._search_walk(agent.weights, b, policy, 0.1, *agent._net(), dg, *tt, 1, *scratch)
    first = out.copy()
    filled = np.nonzero(lc_key)[0]
    # a 3-ply search of this board values 1,000-odd distinct leaves, many of them twice or more
    assert 500 < filled.size < lc_key.size
    for slot in filled[:: max(1, filled.size // 200)]:
        leaf = np.uint64(lc_key[slot])
        assert lc_val[slot] == K.evaluate(agent.weights, K.downgrade(leaf, dg), *agent._net())
    np.testing.assert_array_equal(
        first, K.search_values(agent.weights, b, policy, 0.1, *agent._net(), dg, *tt, 2)
    )
    # Poisoned (+1000 on every cached leaf): a search that reads the cache values every move higher,
    # by at most 1000 (means and maxima move no more than their inputs) and by much more than half of
    # it (most leaves hit; the few that lost their slot to a collision are evaluated again).
    lc_val[filled] += 1000.0
    K._search_walk(agent.weights, b, policy, 0.1, *agent._net(), dg, *tt, 3, *scratch)
    legal = first > -1e300
    assert legal.sum() == 2
    assert np.all(out[legal] > first[legal] + 500.0) and np.all(out[legal] <= first[legal] + 1000.0 + 1e-6)


def test_tiles_past_32768_never_crash():
    agent = trained_tiny(games=50)
    # a 65536 on the board: the general engine moves, features read it as 32768
    big = np.array([[65536, 2, 0, 0], [4, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    vals = agent.move_values(Game(board=big))
    assert set(vals) == set(Game(board=big).legal_moves())
    assert all(np.isfinite(v) for v in vals.values())
    # two 32768s side by side: the merge cannot be packed; valued on the general path
    pair = np.array([[32768, 32768, 2, 4], [4, 2, 8, 2], [2, 8, 2, 8], [8, 2, 8, 2]])
    vals = agent.move_values(Game(board=pair))
    assert vals[Direction.LEFT] == pytest.approx(65536 + agent.value(slide(pair, "left")[0]))
    agent.config = NTupleConfig(layout="4x4", search_depth=2)
    assert set(agent.move_values(Game(board=pair))) == set(Game(board=pair).legal_moves())
    # and the search's own overflow branch (a packed board whose move would overflow)
    b = np.uint64(pack(pair))
    tt = [np.zeros(1024, np.uint64), np.zeros(1024, np.int64), np.zeros(1024, np.int64), np.zeros(1024)]
    out = K.search_values(agent.weights, b, np.array([2]), 0.1, *agent._net(), 0, *tt, 1)
    assert out[Direction.LEFT] == 65536.0


# ------------------------------------------------------------------------------------------ checkpoints


def test_save_load_round_trip_same_move_values(tmp_path):
    agent = trained_tiny(games=100, search_depth=2)
    path = agent.save(tmp_path / "nt")
    meta, arrays = read_checkpoint(path)
    assert set(arrays) == {"index", "weights", "tc_errors", "tc_abs_errors"}
    assert all(a.dtype in (np.float32, np.uint32) for a in arrays.values())
    assert meta["state"]["tuples"] == [list(t) for t in LAYOUTS["4x4"]]
    loaded = Agent.load(path)
    assert isinstance(loaded, NTupleAgent)
    np.testing.assert_array_equal(loaded.weights, agent.weights)
    assert_same_play(agent, loaded, seed=9, moves=30)


def test_sparse_and_dense_storage_both_load(tmp_path):
    agent = tiny()
    list(agent.train(Budget(episodes=5)))
    arrays, meta = agent.get_state()
    assert meta["storage"] == "sparse" and arrays["index"].dtype == np.uint32
    agent.weights[:] = 1.5  # dense now
    arrays, meta = agent.get_state()
    assert meta["storage"] == "dense" and arrays["weights"].dtype == np.float32
    other = tiny()
    other.set_state(arrays, meta)
    np.testing.assert_array_equal(other.weights, agent.weights)


def test_a_resumed_run_goes_on_exactly(tmp_path):
    # TC sums and both random streams are in the checkpoint: a loaded agent trains like the original
    a = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0), seed=8)
    list(a.train(Budget(episodes=50)))  # ends on a finished game: nothing in progress is lost
    b = Agent.load(a.save(tmp_path / "a"))
    assert isinstance(b, NTupleAgent) and b._tc is not None
    np.testing.assert_array_equal(b._tc, a._tc)
    list(a.train(Budget(episodes=20)))
    list(b.train(Budget(episodes=20)))
    np.testing.assert_array_equal(a.weights, b.weights)
    # weights only: smaller, and the TC sums start again from zero
    c = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0, save_tc=False), seed=8)
    list(c.train(Budget(episodes=50)))
    arrays, _ = c.get_state()
    assert set(arrays) == {"index", "weights"}
    assert Agent.load(c.save(tmp_path / "c"))._tc is None  # type: ignore[attr-defined]


def test_different_tuple_layout_is_refused(tmp_path):
    small = tiny()
    list(small.train(Budget(episodes=3)))
    path = small.save(tmp_path / "small")
    other = NTupleAgent(NTupleConfig(layout="2x6+2x4"), seed=0)
    meta, arrays = read_checkpoint(path)
    with pytest.raises(ValueError, match=r"tuple layout '4x4'.*this agent uses '2x6\+2x4'"):
        other.set_state(arrays, meta["state"])
    # a checkpoint whose stored tuples disagree with its own config is refused on load
    meta["state"]["tuples"][0] = [0, 1, 2, 7]
    import json

    payload = dict(arrays)
    payload["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **payload)
    with pytest.raises(CheckpointError, match="layout"):
        load_checkpoint(bad)


def test_registry_config_and_rules():
    agent = create_agent("ntuple", {"layout": "4x4", "search_depth": 2}, seed=1)
    assert isinstance(agent, NTupleAgent)
    assert NTupleAgent.unsupported_reason(Rules(rows=3, cols=3)) is not None
    assert NTupleAgent.unsupported_reason(Rules(spawn_per_move=2)) is not None
    assert NTupleAgent.unsupported_reason(Rules(p4=0.2)) is None
    with pytest.raises(ValueError, match="4x4"):
        NTupleAgent(NTupleConfig(layout="4x4"), Rules(rows=5, cols=5))
    with pytest.raises(ConfigError, match="stage_tiles"):
        NTupleConfig(stage_tiles=(100,))
    with pytest.raises(ConfigError, match="layout"):
        NTupleConfig(layout="9x9")
    with pytest.raises(ConfigError, match="threads"):
        NTupleConfig(threads=0)
    preset = load_preset("ntuple-hour")
    hour = create_agent(preset["agent"], preset["config"], seed=0)
    assert isinstance(hour, NTupleAgent)
    assert (hour.config.layout, hour.config.stage_tiles, hour.config.threads) == ("4x6", (), 2)
    assert hour.config.downgrade_exponent() == 14
    assert hour._game_u.shape == (2, 3) and preset["budget"] == {"cpu_seconds": 7200}


def test_optimistic_initial_values_value_every_board_at_init_value():
    agent = NTupleAgent(NTupleConfig(layout="4x4", init_value=320_000.0), seed=1)
    for board in ([[0] * 4] * 4, [[2, 4, 8, 16], [0, 0, 0, 0], [0, 0, 2048, 0], [4, 0, 0, 2]]):
        assert agent.value(board) == pytest.approx(320_000.0, rel=1e-6)


def test_otd_phase_is_plain_td_at_its_rate_then_temporal_coherence():
    # OTD+TC: the first otd_moves are exactly a plain-TD run at otd_lr (same seed, same weights)
    otd = NTupleAgent(NTupleConfig(layout="4x4", otd_moves=6000, otd_lr=0.1, lr=1.0), seed=3)
    plain = NTupleAgent(NTupleConfig(layout="4x4", tc=False, lr=0.1), seed=3)
    lrs = [e.metrics["lr"] for e in otd.train(Budget(steps=6000))]
    for _ in plain.train(Budget(steps=6000)):
        pass
    assert otd.counters.steps == plain.counters.steps == 6000
    np.testing.assert_array_equal(otd.weights, plain.weights)
    assert set(lrs) == {0.1}
    tc_a = otd._training_arrays()[1::2]
    assert not tc_a.any()  # no coherence sums gathered during the OTD phase
    lrs = [e.metrics["lr"] for e in otd.train(Budget(steps=2000))]
    assert set(lrs) == {1.0}
    assert tc_a.any()
    assert not np.array_equal(otd.weights, plain.weights)
