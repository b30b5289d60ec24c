"""The Stable-Baselines3 bridge (agents/sb3): training, determinism, checkpoints without pickle, legal play.

Skipped (with the reason) where the optional extra is not installed; the environment's recording, which
the bridge relies on, is tested either way.
"""

from __future__ import annotations

import importlib.util
import io
import json
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.base import Budget, Control
from agents.checkpoint import META_KEY
from engine import Game, Rules
from engine.env import Game2048Env

HAVE_SB3 = (
    importlib.util.find_spec("stable_baselines3") is not None
    and importlib.util.find_spec("sb3_contrib") is not None
)
needs_sb3 = pytest.mark.skipif(
    not HAVE_SB3, reason="Stable-Baselines3 is not installed (pip install -e .[sb3])"
)

# The smallest settings that still exercise each algorithm's update: a few hundred moves each.
TINY_PPO = {"n_envs": 2, "n_steps": 32, "batch_size": 32, "n_epochs": 2, "hidden": (16,), "chunk_steps": 64}
TINY: dict[str, dict[str, Any]] = {
    "sb3-ppo": TINY_PPO,
    "sb3-maskppo": TINY_PPO,  # the same PPO, with the illegal moves masked
    "sb3-a2c": {"n_envs": 2, "n_steps": 8, "hidden": (16,), "chunk_steps": 64},
    "sb3-dqn": {
        "n_envs": 2,
        "buffer_size": 1000,
        "learning_starts": 64,
        "batch_size": 16,
        "train_freq": 2,
        "target_update_interval": 100,
        "eps_steps": 200,
        "hidden": (16,),
        "chunk_steps": 64,
    },
}
NAMES = tuple(TINY)
#: what each algorithm's logger must report as metric events after a few updates
LOGGED = {
    "sb3-ppo": {"loss", "policy_loss", "value_loss", "entropy", "explained_variance", "approx_kl", "lr"},
    "sb3-maskppo": {"loss", "policy_loss", "value_loss", "entropy", "explained_variance", "approx_kl", "lr"},
    "sb3-a2c": {"policy_loss", "value_loss", "entropy", "explained_variance", "lr"},
    "sb3-dqn": {"loss", "epsilon", "lr"},
}
ONLY_LEFT = [[0, 2, 4, 8], [0, 4, 8, 2], [0, 2, 4, 8], [0, 4, 8, 2]]


def make(name: str, seed: int = 1, **changes: Any) -> Any:
    from agents.sb3 import agents as sb3_agents

    classes = {
        cls.name: cls
        for cls in (
            sb3_agents.SB3PPOAgent,
            sb3_agents.SB3MaskablePPOAgent,
            sb3_agents.SB3A2CAgent,
            sb3_agents.SB3DQNAgent,
        )
    }
    cls = classes[name]
    return cls(cls.config_cls(**{**TINY[name], **changes}), Rules(), seed=seed)


def weights(agent: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in agent.model.policy.state_dict().items()}


@pytest.fixture(autouse=True)
def _registered(request, monkeypatch):
    """The sb3-* names resolve (as the entry points make them do in an installed studio), so that a
    checkpoint loads by its agent's name (the entry-point tests go through the plug-in loader instead)."""
    from agents import registry

    if "installed" in request.fixturenames:
        return

    points = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    missing = {
        name: target
        for name, target in points["project"]["entry-points"]["studio2048.agents"].items()
        if registry.target_of(name) is None
    }
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents(missing))


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----------------------------------------------------------------------------- the environment (always)


def test_env_records_the_game_it_plays():
    env = Game2048Env(record=True)
    _, info = env.reset(seed=5)
    assert env.trace is not None and env.trace.n_moves == 0
    rng = np.random.default_rng(0)
    terminated, steps = False, 0
    while not terminated:
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, _, info = env.step(int(rng.choice(legal)))
        steps += 1
        assert ("trace" in info) == terminated
    trace = info["trace"]
    assert trace.n_moves == steps == info["moves"]
    assert trace.final_score == info["score"] and trace.max_tile == info["max_tile"]
    # The trace replays: the same game from the same seed, move by move, ends on the same board.
    game = Game(seed=5)
    for i, move in enumerate(trace.moves):
        np.testing.assert_array_equal(game.board, trace.layouts[i])
        game.step(move)
    np.testing.assert_array_equal(game.board, trace.final_board)


def test_env_without_record_keeps_no_trace_and_illegal_moves_are_not_recorded():
    env = Game2048Env()
    env.reset(options={"board": ONLY_LEFT})
    assert env.trace is None
    env = Game2048Env(record=True)
    env.reset(seed=1, options={"board": ONLY_LEFT})
    _, _, _, _, info = env.step(3)  # right: illegal, a no-op
    assert info["illegal_action"] and env.trace is not None and env.trace.n_moves == 0
    env.step(1)
    assert env.trace.n_moves == 1 and env.trace.moves == [1]


def test_pyproject_declares_the_extra_and_entry_points():
    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    project = data["project"]
    assert "torch==2.13.0" in project["dependencies"]
    assert any(r.startswith("stable-baselines3") for r in project["optional-dependencies"]["sb3"])
    assert any(r.startswith("sb3-contrib") for r in project["optional-dependencies"]["sb3"])
    points = project["entry-points"]["studio2048.agents"]
    assert set(points) == set(NAMES)
    if HAVE_SB3:
        import importlib

        for name, target in points.items():
            module, _, attr = target.partition(":")
            assert getattr(importlib.import_module(module), attr).name == name


def _block_sb3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this test's imports behave as if the extra were not installed."""
    import builtins
    import sys

    real_import = builtins.__import__

    def no_sb3(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("stable_baselines3", "sb3_contrib"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    for mod in [m for m in sys.modules if m == "agents.sb3" or m.startswith("agents.sb3.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setattr(builtins, "__import__", no_sb3)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The studio's entry points as ``pip install -e .`` leaves them (where the installed studio predates
    them, a dist-info on sys.path declares them); the registry looks for plug-ins again before and after."""
    from importlib.metadata import entry_points

    from agents import registry

    if set(NAMES) <= {ep.name for ep in entry_points(group=registry.ENTRY_POINT_GROUP)}:
        # the studio is installed from this tree: its own metadata declares them
        registry.reload_plugins()
        yield registry
        registry.reload_plugins()
        return
    info = tmp_path / "studio2048_sb3_entry_points-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: studio2048-sb3-entry-points\nVersion: 0.1\n")
    points = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    lines = "".join(
        f"{name} = {target}\n"
        for name, target in points["project"]["entry-points"][registry.ENTRY_POINT_GROUP].items()
    )
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{lines}")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.reload_plugins()
    yield registry
    monkeypatch.undo()
    registry.reload_plugins()


def test_without_sb3_the_agents_are_listed_as_unavailable_with_the_install_line(installed, monkeypatch):
    _block_sb3(monkeypatch)
    with pytest.raises(ImportError, match=r"^Stable-Baselines3 is not installed: pip install -e \.\[sb3\]$"):
        importlib.import_module("agents.sb3.agents")
    broken = dict(installed.check_plugins())  # each tried: listing alone imports none
    assert set(NAMES) <= set(broken)
    for name in NAMES:
        assert broken[name].endswith("pip install -e .[sb3]"), broken[name]
        assert name not in installed.agent_names()
    assert "dqn" in installed.agent_names()  # nothing else is affected


@needs_sb3
def test_with_sb3_the_entry_points_are_agents(installed):
    names = installed.agent_names()
    assert set(NAMES) <= set(names)
    assert not {name for name, _ in installed.broken_plugins()} & set(NAMES)
    for name in NAMES:
        assert installed.get_agent_class(name).name == name
        assert installed.plugin_of(name).reason is None


# ------------------------------------------------------------------------------------- torch pieces


@needs_sb3
def test_legal_mask_torch_matches_the_engine():
    import torch

    from agents.sb3.features import legal_mask_torch
    from engine.core import to_exponents

    only_right = [[2, 4, 0, 0], [4, 2, 0, 0], [2, 4, 0, 0], [4, 2, 0, 0]]
    boards = [ONLY_LEFT, only_right, [[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]]]
    expected = [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    rng = np.random.default_rng(3)
    for _ in range(300):  # random boards: many with few legal moves
        exps = rng.integers(0, 4, size=(4, 4))
        exps[rng.random((4, 4)) < 0.2] = 0
        boards.append(np.where(exps > 0, 2**exps, 0).tolist())
    exps_B = np.stack([to_exponents(np.array(b)) for b in boards])
    got = legal_mask_torch(torch.as_tensor(exps_B)).numpy()
    assert got[:3].astype(int).tolist() == expected
    for board, row in zip(boards, got):
        np.testing.assert_array_equal(row, Game(board=np.array(board), seed=0).legal_mask(), str(board))


@needs_sb3
def test_one_hot_features():
    import torch
    from gymnasium import spaces

    from agents.sb3.features import OneHotBoard

    extractor = OneHotBoard(spaces.Box(0, 17, shape=(4, 4), dtype=np.uint8), planes=4)
    obs = torch.tensor([[[0, 1, 2, 3], [4, 9, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]], dtype=torch.uint8)
    out = extractor(obs).view(1, 16, 4)
    assert extractor.features_dim == 64
    assert out[0, :6].argmax(dim=1).tolist() == [0, 1, 2, 3, 3, 3]  # 4 and 9 share the last plane
    assert out.sum().item() == 16


# ------------------------------------------------------------------------------------------ training


@needs_sb3
@pytest.mark.parametrize("name", NAMES)
def test_tiny_training_reports_games_and_logger_values(name):
    from agents.metrics import metrics_of

    agent = make(name)
    events = list(agent.train(Budget(steps=600)))
    episodes = [e for e in events if e.kind == "episode"]
    assert agent.counters.steps >= 600 and agent.counters.steps == agent.model.num_timesteps
    assert episodes and agent.counters.episodes == len(episodes)
    for e in episodes:
        assert e.game is not None and e.metrics["score"] == e.game.final_score
        assert e.metrics["moves"] == e.game.n_moves > 0
        assert e.metrics["max_tile"] == e.game.max_tile >= 4
    logged = set().union(*(e.metrics for e in events if e.kind == "update"))
    assert LOGGED[name] <= logged, LOGGED[name] - logged
    declared = {m.name for m in metrics_of(agent)}
    assert logged <= declared, logged - declared  # every curve has a declaration (label, panel)
    assert [e.step for e in events] == sorted(e.step for e in events)
    # SB3's loop is left at the step that uses the budget (mid-rollout for PPO / A2C)
    assert 600 <= agent.counters.steps < 600 + agent.config.n_envs


@needs_sb3
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_weights(name):
    a, b, c = make(name, seed=4), make(name, seed=4), make(name, seed=5)
    wa, wc = weights(a), weights(c)
    assert all(np.array_equal(wa[k], v) for k, v in weights(b).items())
    assert not all(np.array_equal(wa[k], v) for k, v in wc.items())
    scores = []
    for agent in (a, b):
        events = list(agent.train(Budget(steps=400)))
        scores.append([e.metrics["score"] for e in events if e.kind == "episode"])
    assert scores[0] == scores[1]
    wa, wb = weights(a), weights(b)
    assert all(np.array_equal(wa[k], v) for k, v in wb.items())
    assert not all(np.array_equal(wa[k], v) for k, v in weights(make(name, seed=4)).items())


@needs_sb3
def test_knobs_reach_the_sb3_model():
    ppo = make("sb3-maskppo", n_steps=48, batch_size=24, n_epochs=3, clip_range=0.3, gamma=0.9, lr=1e-3)
    assert (ppo.model.n_steps, ppo.model.batch_size, ppo.model.n_epochs) == (48, 24, 3)
    assert ppo.model.clip_range(1.0) == 0.3 and ppo.model.gamma == 0.9 and ppo.model.learning_rate == 1e-3
    assert ppo.model.target_kl is None and make("sb3-ppo", target_kl=0.05).model.target_kl == 0.05
    a2c = make("sb3-a2c", n_steps=5, ent_coef=0.2, use_rms_prop=False)
    assert (a2c.model.n_steps, a2c.model.ent_coef) == (5, 0.2)
    assert type(a2c.model.policy.optimizer).__name__ == "Adam"
    dqn = make("sb3-dqn", buffer_size=500, batch_size=8, tau=0.5, target_update_interval=40)
    assert (dqn.model.buffer_size, dqn.model.batch_size, dqn.model.tau) == (500, 8, 0.5)
    assert dqn.model.target_update_interval == 40  # moves: SB3 divides by the games per step


@needs_sb3
def test_maskable_ppo_never_tries_an_illegal_move_while_training():
    agent = make("sb3-maskppo")
    events = list(agent.train(Budget(steps=600)))
    finished = sum(e.game.n_moves for e in events if e.kind == "episode" and e.game is not None)
    playing = sum(env.unwrapped.game.moves for env in agent.vec_env.envs)
    # every step the learner took moved a game: no no-op (illegal) action was ever sampled
    assert finished + playing == agent.counters.steps


@needs_sb3
def test_stop_ends_training_between_steps():
    agent = make("sb3-ppo")
    control = Control()
    events = []
    for event in agent.train(Budget(steps=100_000), control):
        events.append(event)
        control.stop()
    assert agent.counters.steps < 1000
    _arrays, meta = agent.get_state()  # a consistent, saveable state
    assert meta["num_timesteps"] == agent.counters.steps


@needs_sb3
def test_pause_blocks_between_learn_calls_and_is_not_training_time():
    import threading
    import time

    agent = make("sb3-maskppo")
    control = Control()
    seen: list[int] = []
    t0 = time.perf_counter()
    resumer = threading.Timer(1.0, control.resume)
    for event in agent.train(Budget(steps=300), control):
        if not seen:
            control.pause()  # the next learn() call waits
            resumer.start()
        seen.append(event.step)
    wall = time.perf_counter() - t0
    assert agent.counters.steps >= 300
    assert agent.counters.seconds <= wall - 0.9  # the paused second is not counted


@needs_sb3
def test_a_resumed_agent_continues_its_games_counters_and_schedule(tmp_path):
    agent = make("sb3-dqn", eps_steps=1000)
    list(agent.train(Budget(steps=300)))
    # (SB3 updates epsilon after the callback: the agent stopped one vectorised step before that)
    assert agent.model.exploration_rate == pytest.approx(1.0 - 0.99 * 298 / 1000)
    loaded = type(agent).load(agent.save(tmp_path / "a.npz"))
    assert loaded.model.exploration_rate == pytest.approx(1.0 - 0.99 * 300 / 1000)
    assert loaded.model.num_timesteps == agent.model.num_timesteps == loaded.counters.steps
    assert loaded.model.replay_buffer.size() == agent.model.replay_buffer.size()
    events = list(loaded.train(Budget(steps=100)))
    assert loaded.counters.steps >= 400 and events
    # the schedule counts lifetime moves
    assert loaded.model.exploration_rate == pytest.approx(1.0 - 0.99 * (loaded.counters.steps - 2) / 1000)


# --------------------------------------------------------------------------------------- checkpoints


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


@needs_sb3
@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_round_trip_without_pickle(name, tmp_path):
    from agents.checkpoint import load_checkpoint

    agent = make(name)
    list(agent.train(Budget(steps=300)))
    path = agent.save(tmp_path / f"{name}.npz")
    members = _members(path)
    assert members and all(n.endswith(".npy") for n in members)
    for member, raw in members.items():
        fh = io.BytesIO(raw)
        fmt = np.lib.format
        version = fmt.read_magic(fh)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        _shape, _fortran, dtype = read_header(fh)
        assert dtype.kind in "biuf", member  # numbers only: no object array, so nothing pickled
        np.load(io.BytesIO(raw), allow_pickle=False)
        # what a pickled model (SB3's model.save, torch.save) would name in its stream
        for marker in (b"torch._utils", b"stable_baselines3", b"cloudpickle", b"collections\nOrderedDict"):
            assert marker not in raw, (member, marker)
    meta = json.loads(np.load(io.BytesIO(members[META_KEY + ".npy"])).tobytes().decode())
    assert meta["agent"] == name and meta["config"]["hidden"] == list(TINY[name]["hidden"])

    loaded: Any = load_checkpoint(path)
    assert isinstance(loaded, type(agent)) and loaded.counters == agent.counters
    wa, wl = weights(agent), weights(loaded)
    assert wa.keys() == wl.keys() and all(np.array_equal(wa[k], wl[k]) for k in wa)
    opt_a, opt_l = agent.model.policy.optimizer.state_dict(), loaded.model.policy.optimizer.state_dict()
    assert opt_a["state"].keys() == opt_l["state"].keys() and opt_a["state"]
    for game_seed in range(3):
        game = Game(seed=game_seed)
        for _ in range(30):
            if game.game_over:
                break
            assert agent.move_values(game) == loaded.move_values(game)
            move = agent.act(game)
            assert loaded.act(game) == move
            game.step(move)


@needs_sb3
def test_weights_of_another_network_are_refused():
    arrays, meta = make("sb3-maskppo").get_state()
    other = make("sb3-maskppo", hidden=(8,))
    with pytest.raises(ValueError, match="policy/"):
        other.set_state(arrays, meta)


# ------------------------------------------------------------------------------------------ playing


@needs_sb3
@pytest.mark.parametrize("name", NAMES)
def test_plays_only_legal_moves(name):
    agent = make(name)
    list(agent.train(Budget(steps=200)))
    game = Game(board=np.array(ONLY_LEFT), seed=0)
    assert agent.act(game).label == "left"
    assert set(agent.move_values(game)) == set(game.legal_moves())
    for seed in range(2):
        game = Game(seed=seed)
        while not game.game_over:
            move = agent.act(game)
            assert game.legal_mask()[move]
            game.step(move)
        assert game.moves > 10


@needs_sb3
def test_policy_values_are_shares_over_legal_moves():
    agent = make("sb3-maskppo")
    left_or_right = [[2, 2, 4, 8], [4, 8, 16, 32], [2, 4, 8, 16], [4, 8, 16, 32]]
    values = agent.move_values(Game(board=np.array(left_or_right), seed=0))
    assert {d.label for d in values} == {"left", "right"}
    assert sum(values.values()) == pytest.approx(1.0)
    assert agent.value_kind == "share" and make("sb3-dqn").value_kind == "rank"
