"""Play-only processes (evaluation / arena workers, a run's evaluator): torch learners load without
building their optimiser (which imports torch._dynamo, over a CPU-second of a worker's start), and the
optimiser state they loaded is the one they train from when they do train."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import agents.play_only
from agents.base import Budget
from agents.checkpoint import load_checkpoint
from agents.spec import AgentSpec
from engine import Game

REPO = Path(__file__).resolve().parents[2]
LEARNERS = ("dqn", "policy", "td-afterstate", "mcts", "imitation")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dqn checkpoint with a real optimiser state (a few training steps behind it)."""
    from agents.dqn import DQNAgent, DQNConfig

    agent = DQNAgent(DQNConfig(hidden=(16,), batch_size=8, learning_starts=8), seed=3)
    for _ in agent.train(Budget(episodes=2)):
        pass
    assert agent.counters.updates > 0
    return agent.save(tmp_path_factory.mktemp("cp") / "dqn.npz")


def test_a_play_only_load_plays_alike_and_trains_from_the_same_optimiser_state(
    trained: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager = load_checkpoint(trained)
    monkeypatch.setattr(agents.play_only, "_play_only", True)
    lazy = load_checkpoint(trained)
    assert lazy._optimizer is None and eager._optimizer is not None
    game = Game(seed=11)
    assert lazy.move_values(game) == eager.move_values(game)
    # first use builds it and applies what was loaded: the states are the same, array for array
    lazy_arrays, lazy_meta = lazy.get_state()
    eager_arrays, eager_meta = eager.get_state()
    assert lazy_meta["optimizers"] == eager_meta["optimizers"]
    opt_keys = sorted(k for k in eager_arrays if k.startswith("opt/"))
    assert opt_keys and opt_keys == sorted(k for k in lazy_arrays if k.startswith("opt/"))
    for k in opt_keys:
        np.testing.assert_array_equal(lazy_arrays[k], eager_arrays[k])


def test_a_bad_optimiser_state_loaded_for_play_is_refused_at_the_first_training_step(
    trained: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents.play_only, "_play_only", True)
    agent = load_checkpoint(trained)
    assert agent._pending_optimizer is not None
    arrays, meta = agent._pending_optimizer
    bad = {**meta, "param_groups": [{**meta["param_groups"][0], "lr": "fast"}]}
    agent._pending_optimizer = (arrays, bad)
    with pytest.raises(ValueError, match="'lr'"):
        agent.optimizer  # noqa: B018


@pytest.mark.parametrize("name", LEARNERS)
def test_fresh_learners_build_their_optimiser_on_first_use(name: str) -> None:
    agent = AgentSpec(name).build()
    assert agent._optimizer is None  # type: ignore[attr-defined]
    opt = agent.optimizer  # type: ignore[attr-defined]
    assert agent.optimizer is opt  # type: ignore[attr-defined]
    params = {id(p) for p in agent.net.parameters()}  # type: ignore[attr-defined]
    assert {id(p) for g in opt.param_groups for p in g["params"]} == params


def test_an_arena_worker_start_never_imports_torch_dynamo(tmp_path: Path) -> None:
    # What a local evaluation worker runs at its start: the initialiser, then the agent built and warmed up.
    from agents.policy import PolicyAgent

    path = PolicyAgent(seed=1).save(tmp_path / "policy.npz")
    code = (
        "import sys; from agents import arena; from agents.spec import AgentSpec; from engine import Rules; "
        f"arena._init_worker(None, 1, None); arena._worker_agent_for(AgentSpec.from_checkpoint({str(path)!r}), Rules()); "
        "assert 'torch' in sys.modules; assert 'torch._dynamo' not in sys.modules, 'dynamo'"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
