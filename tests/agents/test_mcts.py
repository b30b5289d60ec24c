"""MCTS agent (seed 004): PUCT, chance nodes, root noise, networks, self-play on workers, checkpoints."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from agents.base import Budget, Control, TrainContext
from agents.mcts import MCTSAgent, MCTSConfig, play_selfplay_game, value_targets
from agents.mcts.nets import LeelaNetwork, ZeroNetworkMini, inference_copy
from agents.mcts.search import FastOps, GeneralOps, Node, Search
from agents.mcts.selfplay import RayPool, WorkerSpec, import_ray, make_pool
from agents.training import TrainTracker
from engine import Direction, Game, Rules, slide, to_exponents
from engine.boards import legal_masks

# Small enough that a generation of 2 games takes a second or two on one core (check-agent uses it too).
TINY = dict(MCTSAgent.smoke_config)


def tiny_agent(seed: int = 0, rules: Rules | None = None, **changes: object) -> MCTSAgent:
    return MCTSAgent(MCTSConfig.from_dict({**TINY, **changes}), rules, seed=seed)


def sum_of_exponents_evaluator(exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stand-in network: uniform logits, value = sum of the board's exponents (easy to add up by hand)."""
    n = exps_NRC.shape[0]
    return np.zeros((n, 4), dtype=np.float32), exps_NRC.reshape(n, -1).sum(axis=1).astype(np.float64)


def make_search(
    rules: Rules, evaluate=sum_of_exponents_evaluator, c_puct: float = 1.25, seed: int = 0
) -> Search:
    return Search(GeneralOps(rules, 32), evaluate, np.random.default_rng(seed), c_puct=c_puct)


# ------------------------------------------------------------------------------------------- search


def hand_node(q1: float) -> Node:
    node = Node(state=None, logits=None, v_net=0.0, terminal=False)
    node.ready = True
    node.actions = [0, 1, 2]
    node.prior = [0.5, 0.3, 0.2]
    node.n = [10, 2, 0]
    node.q = [100.0, q1, 0.0]
    node.total = 12
    node.value = 105.0
    return node


def test_puct_picks_the_best_q_plus_u() -> None:
    search = make_search(Rules(4, 4))
    search.lo, search.hi = 100.0, 120.0
    # Q normalised by the tree bounds [100, 120]; the unvisited move gets the node's value (105 -> 0.25).
    # U = 1.25 * P * sqrt(12) / (1 + N):
    #   move 0: 0.0 + 1.25 * 0.5 * 3.4641 / 11 = 0.197
    #   move 1: 1.0 + 1.25 * 0.3 * 3.4641 / 3  = 1.433   <- best
    #   move 2: 0.25 + 1.25 * 0.2 * 3.4641 / 1 = 1.116
    assert search._select(hand_node(q1=120.0)) == 1
    # With move 1's Q at the bottom of the range (0.433), the unvisited move wins on its prior.
    assert search._select(hand_node(q1=100.0)) == 2


def test_puct_uses_priors_on_a_first_visit() -> None:
    search = make_search(Rules(4, 4))
    node = hand_node(q1=0.0)
    node.n, node.q, node.total = [0, 0, 0], [0.0, 0.0, 0.0], 0
    assert search._select(node) == 0  # highest prior, although sqrt(N(s)) = 0


def test_chance_node_takes_the_expectation_over_spawns() -> None:
    # 1x3 board [2 2 0]: left -> [4 0 0] (reward 4) with 2 empty cells, so 4 spawn outcomes:
    #   [4 2 0] p=0.45 V=2+1   [4 4 0] p=0.05 V=2+2   [4 0 2] p=0.45 V=3   [4 0 4] p=0.05 V=4
    # E[V] = 0.45*3 + 0.05*4 + 0.45*3 + 0.05*4 = 3.1, so Q(left) = 4 + 3.1 = 7.1.
    rules = Rules(1, 3, p4=0.1)
    search = make_search(rules)
    root = search.root(np.array([[2, 2, 0]]))
    search.run(root, 1)
    i = int(np.argmax(root.n))
    chance = root.chances[i]
    assert chance is not None
    assert sorted(chance.probs) == pytest.approx([0.05, 0.05, 0.45, 0.45])
    assert chance.expect == pytest.approx(3.1)
    assert root.q[i] == pytest.approx(7.1)
    # The root's value: mean of its own network value (2) and the one backed-up Q.
    assert root.value == pytest.approx((2 + 7.1) / 2)


def test_a_finished_game_is_worth_zero() -> None:
    # 1x2 board [2 0]: only right is legal -> [0 2]; spawns: [2 2] (p 0.9, V = 2) and [4 2] (p 0.1): full, no
    # merge, game over -> 0 whatever the network says. E = 0.9 * 2 = 1.8.
    search = make_search(Rules(1, 2, p4=0.1))
    root = search.root(np.array([[2, 0]]))
    search.run(root, 1)
    assert root.actions == [int(Direction.RIGHT)]
    chance = root.chances[0]
    assert chance is not None
    dead = chance.child(int(np.argmin(np.abs(np.array(chance.probs) - 0.1))))
    assert dead.terminal and dead.value == 0.0
    assert chance.expect == pytest.approx(1.8)


def test_fast_and_general_ops_search_the_same_tree() -> None:
    board = np.array([[2, 2, 4, 0], [0, 4, 8, 0], [0, 0, 2, 0], [2, 0, 0, 16]])
    rules = Rules(4, 4)
    results = []
    for ops in (GeneralOps(rules, 32), FastOps(rules, 32)):
        search = Search(ops, sum_of_exponents_evaluator, np.random.default_rng(0), c_puct=1.25)
        root = search.run(search.root(board), 30)
        results.append((root.actions, root.n, [round(q, 9) for q in root.q]))
    assert results[0] == results[1]


def test_search_never_returns_an_illegal_move() -> None:
    # On a 1x3 board [2 4 0] the only legal move is right.
    agent = tiny_agent(rules=Rules(1, 3))
    game = Game(rules=Rules(1, 3), board=np.array([[2, 4, 0]]))
    assert agent.act(game) == Direction.RIGHT
    assert set(agent.move_values(game)) == {Direction.RIGHT}


def test_agent_moves_are_legal_through_whole_games() -> None:
    agent = tiny_agent()
    for seed in range(2):
        game = Game(seed=seed)
        while not game.game_over and game.moves < 60:
            move = agent.act(game)
            assert game.legal_mask()[move]
            game.step(move)


def test_dirichlet_noise_only_at_the_root_and_priors_sum_to_one() -> None:
    logits = np.array([2.0, 0.5, -1.0, 0.0], dtype=np.float32)

    def evaluate(exps_NRC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = exps_NRC.shape[0]
        return np.tile(logits, (n, 1)), np.zeros(n)

    search = make_search(Rules(4, 4), evaluate=evaluate, seed=3)
    board = np.array([[2, 0, 0, 0], [0, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])  # all 4 moves legal
    root = search.root(board)
    search.add_noise(root)
    raw = np.exp(logits - logits.max())
    raw /= raw.sum()
    assert math.fsum(root.prior) == pytest.approx(1.0)
    assert not np.allclose(root.prior, raw)
    # Mixed with weight 0.25: every prior stays within 0.25 of the network's.
    assert np.all(np.abs(np.array(root.prior) - raw) <= 0.25 + 1e-12)
    search.run(root, 40)
    inner = [
        c for ch in root.chances if ch for c in ch.children if c is not None and c.ready and not c.terminal
    ]
    assert inner
    for node in inner:
        expected = raw[node.actions] / raw[node.actions].sum()
        assert node.prior == pytest.approx(expected.tolist())


def test_value_targets_by_hand() -> None:
    rewards = np.array([4, 0, 8])
    roots = np.array([30.0, 20.0, 10.0])
    assert value_targets(rewards, roots, 0.0, "return", 1) == pytest.approx(np.log1p([12, 8, 8]))
    assert value_targets(rewards, roots, 5.0, "return", 1) == pytest.approx(np.log1p([17, 13, 13]))
    assert value_targets(rewards, roots, 0.0, "search", 1) == pytest.approx(np.log1p([30, 20, 10]))
    # n = 1: reward + next root value; the last one bootstraps from the tail.
    assert value_targets(rewards, roots, 0.0, "n_step", 1) == pytest.approx(np.log1p([24, 10, 8]))


# ----------------------------------------------------------------------------------------- networks


@pytest.mark.parametrize("shape", [(3, 3), (4, 4), (3, 5)])
@pytest.mark.parametrize("kind", ["mini", "lc0"])
def test_networks_output_shapes(shape: tuple[int, int], kind: str) -> None:
    rows, cols = shape
    if kind == "mini":
        net: torch.nn.Module = ZeroNetworkMini(rows, cols, planes=12, filters=8, dense=16)
    else:
        net = LeelaNetwork(rows, cols, planes=12, filters=8, blocks=2, se_channels=4)
    x = torch.rand(5, 12, rows, cols)
    logits, value = net(x)
    assert logits.shape == (5, 4) and value.shape == (5,)
    fast = inference_copy(net, rows, cols)
    fast_logits, fast_value = fast(x)
    assert torch.allclose(fast_logits, logits, atol=1e-5) and torch.allclose(fast_value, value, atol=1e-5)


def test_augmented_batches_keep_policies_on_their_moves() -> None:
    agent = tiny_agent()
    boards = np.stack([to_exponents(Game(seed=s).board) for s in range(8)])
    policy = np.zeros((8, 4), dtype=np.float32)
    policy[:, 1] = 1.0  # all on "left"
    agent.window.add(boards, policy, legal_masks(boards), np.zeros(8, dtype=np.float32), False)
    x, pi, mask, _ = agent._batch(np.arange(8), augment=True)
    exps = x.numpy().argmax(axis=1)  # one-hot planes back to exponents
    assert np.array_equal(mask.numpy(), legal_masks(exps))
    for b in range(8):
        moved = int(pi[b].argmax())
        # "left" on the original board is `moved` on the transformed one: same merges, same reward.
        assert slide(2 ** exps[b] * (exps[b] > 0), moved)[1] == slide(2 ** boards[b] * (boards[b] > 0), 1)[1]


# ----------------------------------------------------------------------------------------- training


def first_losses(agent: MCTSAgent, context: TrainContext | None = None) -> dict[str, float]:
    for event in agent.train(Budget(episodes=2), Control(), context):
        if event.kind == "update" and "policy_loss" in event.metrics:
            return dict(event.metrics)
    raise AssertionError("no update event")


def test_same_seed_same_first_losses() -> None:
    a, b = first_losses(tiny_agent(seed=7)), first_losses(tiny_agent(seed=7))
    assert a["policy_loss"] == b["policy_loss"] and a["value_loss"] == b["value_loss"]
    assert first_losses(tiny_agent(seed=8))["value_loss"] != a["value_loss"]


def test_smoke_training_reports_games_losses_and_generations() -> None:
    agent = tiny_agent(seed=1, validation_split=0.0)
    events = list(agent.train(Budget(episodes=4)))
    kinds = [e.kind for e in events]
    assert kinds[0] == "info" and "1 worker" in events[0].message
    episodes = [e for e in events if e.kind == "episode"]
    assert len(episodes) == 4
    assert all({"score", "max_tile", "moves", "games_per_s"} <= set(e.metrics) for e in episodes)
    assert all(e.game is not None and e.game.n_moves == e.metrics["moves"] for e in episodes)
    losses = [e.metrics for e in events if "policy_loss" in e.metrics]
    assert len(losses) == 2 and all(np.isfinite(m["value_loss"]) and m["lr"] == 0.01 for m in losses)
    gens = [e.metrics for e in events if "generation" in e.metrics and e.kind == "update"]
    assert [g["generation"] for g in gens] == [1, 2]
    assert agent.counters.episodes == 4 and agent.counters.steps == sum(e.metrics["moves"] for e in episodes)
    assert len(agent.window) == agent.counters.steps


def test_validation_losses_come_from_held_out_games() -> None:
    agent = tiny_agent(epochs=2)
    boards = np.stack([to_exponents(Game(seed=s).board) for s in range(6)])
    policy = np.full((6, 4), 0.25, dtype=np.float32)
    targets = np.full(6, 3.0, dtype=np.float32)
    agent.window.add(boards, policy, legal_masks(boards), targets, np.array([0, 0, 0, 0, 1, 1], dtype=bool))
    assert [len(part) for part in agent.window.split()] == [4, 2]
    events = list(agent._learn(TrainTracker(agent.counters, Budget(episodes=1), Control())))
    assert len(events) == 2 and agent.counters.updates == 2  # 4 positions = one batch per epoch
    for e in events:
        assert {"policy_loss", "value_loss", "val_policy_loss", "val_value_loss", "lr"} <= set(e.metrics)
        assert e.metrics["val_policy_loss"] > 0 and np.isfinite(e.metrics["val_value_loss"])


def test_stop_ends_training_between_games() -> None:
    control = Control()
    agent = tiny_agent()
    events = []
    for event in agent.train(Budget(episodes=10), control):
        events.append(event)
        if event.kind == "episode":
            control.stop()
    assert sum(e.kind == "episode" for e in events) == 1
    assert not any("policy_loss" in e.metrics for e in events)


def test_two_local_workers_play_the_same_generation_as_one() -> None:
    inline = first_losses(tiny_agent(seed=5))
    pooled = first_losses(tiny_agent(seed=5), TrainContext(workers=2))
    assert pooled["policy_loss"] == pytest.approx(inline["policy_loss"], rel=1e-5)
    assert pooled["value_loss"] == pytest.approx(inline["value_loss"], rel=1e-5)


@pytest.mark.ray
def test_ray_generation_on_a_local_cluster() -> None:
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        agent = tiny_agent(seed=5)
        events = list(agent.train(Budget(episodes=2), Control(), TrainContext(workers=2, backend="ray")))
        assert "Ray actors" in events[0].message
        assert sum(e.kind == "episode" for e in events) == 2
        assert any("policy_loss" in e.metrics for e in events)
    finally:
        ray.shutdown()


def test_ray_backend_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(RuntimeError, match=r"\.\[ray\]"):
        import_ray()
    with pytest.raises(RuntimeError, match="optional extra"):
        RayPool(WorkerSpec("agents.mcts:MCTSWorker"), 1)


def test_save_load_round_trip(tmp_path) -> None:
    agent = tiny_agent(seed=2)
    list(agent.train(Budget(episodes=2)))
    path = agent.save(tmp_path / "mcts")
    loaded = MCTSAgent.load(path)
    assert isinstance(loaded, MCTSAgent)
    assert loaded.config == agent.config and loaded.counters == agent.counters
    assert loaded.generation == agent.generation == 1
    assert loaded.scheduler.last_epoch == agent.scheduler.last_epoch
    for k, v in agent.net.state_dict().items():
        assert torch.equal(v, loaded.net.state_dict()[k])
    assert len(loaded.window) == len(agent.window)
    assert np.array_equal(loaded.window.exps[: len(agent.window)], agent.window.exps[: len(agent.window)])
    board = Game(seed=11).board
    assert loaded.act(Game(board=board)) == agent.act(Game(board=board))
    # Training goes on from the same state: the same next games and losses.
    assert first_losses(loaded) == pytest.approx(first_losses(agent))


def test_selfplay_game_records_policies_and_cuts_at_max_moves() -> None:
    agent = tiny_agent(max_moves=12)
    game = play_selfplay_game(agent.evaluate, agent.rules, agent.config, seed=4)
    assert game is not None
    assert game.moves == 12 and game.truncated and game.tail_value >= 0.0
    assert game.exps_NRC.shape == (12, 4, 4) and game.policy_N4.shape == (12, 4)
    assert np.allclose(game.policy_N4.sum(axis=1), 1.0)
    legal = legal_masks(game.exps_NRC)
    assert np.all(game.policy_N4[~legal] == 0.0)  # visits only on legal moves
    assert game.trace.n_moves == 12 and game.score == game.trace.final_score


def test_bench_mcts_reports_games_per_minute_per_pool(capsys: pytest.CaptureFixture[str]) -> None:
    from studio.cli import main

    options = ["-o", "games=1", "-o", "max_moves=5", "-o", "simulations=2", "-o", "workers=1", "-o", "ray=0"]
    assert main(["bench", "mcts", "--json", "--rounds", "1", *options]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["benchmark"] == "mcts" and report["unit"] == "games_per_min"
    local = report["results"]["local_1"]
    assert local["games"] == 1 and local["moves"] == 5 and local["games_per_s"] > 0
    assert local["ratio"] == 1.0


def test_selfplay_game_is_abandoned_when_asked() -> None:
    agent = tiny_agent(max_moves=1000)
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 3

    assert play_selfplay_game(agent.evaluate, agent.rules, agent.config, 4, should_stop) is None
    assert len(asked) == 4  # asked before each move: three moves played, the fourth not


@pytest.mark.parametrize("workers", [1, 2])
def test_pools_ship_weights_and_abandon_games_when_told(workers: int) -> None:
    import time

    spec = WorkerSpec("tests.agents.selfplay_fakes:SlowWorker")
    with make_pool(spec, workers) as pool:
        pool.set_weights({"version": np.array(1)})
        assert sorted(pool.run([0.01, 0.02, 0.03])) == [(0, (0.01, 1)), (1, (0.02, 1)), (2, (0.03, 1))]
        pool.set_weights({"version": np.array(2)})
        t0 = time.monotonic()
        deadline = t0 + 0.5
        done = list(pool.run([0.01, 60.0, 60.0], keep_going=lambda: time.monotonic() < deadline))
        assert time.monotonic() - t0 < 30  # not the 60 s the long games would take
        assert done == [(0, (0.01, 2))]
        # The pool still works after abandoning games (killed workers are restarted, with the weights).
        assert list(pool.run([0.01])) == [(0, (0.01, 2))]
