"""The ``device`` knob of the torch learners: choices, resolution, one-line errors, checkpoints on any device.

Runs on a CPU-only machine (CUDA is hidden with monkeypatch where a test needs it absent); the tests at
the end train on every accelerator torch sees and are skipped where there is none.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

from agents.base import Budget
from agents.checkpoint import CheckpointError, load_checkpoint
from agents.nn import device as devmod
from agents.nn.agent import TorchAgent
from agents.nn.device import DEVICES, available_devices, describe_device, resolve_device
from agents.registry import agent_names, get_agent_class
from agents.spec import AgentSpec
from engine import Game, Rules
from studio.cli import main

TORCH_AGENTS = [n for n in agent_names() if issubclass(get_agent_class(n), TorchAgent)]
#: a tiny training budget per learner (a few hundred moves, or one generation / epoch)
SMALL = {
    "dqn": {"learning_starts": 50, "batch_size": 16, "replay_capacity": 1000},
    "mcts": {"simulations": 4, "games_per_generation": 1, "epochs": 1, "batch_size": 16},
}
BOARD = [[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]]


@pytest.fixture
def no_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch sees neither CUDA nor MPS, whatever this machine has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devmod, "mps_available", lambda: False)


def test_the_torch_learners_are_the_expected_ones() -> None:
    assert {"dqn", "policy", "mcts", "imitation", "td-afterstate"} <= set(TORCH_AGENTS)


@pytest.mark.parametrize("name", TORCH_AGENTS)
def test_every_torch_learner_has_the_device_knob(name: str) -> None:
    cls = get_agent_class(name)
    spec = next(s for s in cls.config_cls.specs() if s.name == "device")
    assert spec.choices == DEVICES == ("auto", "cpu", "cuda", "mps")
    assert spec.default == "auto" and spec.kind == "str"
    agent = cls(cls.config_cls(device="cpu"), Rules(), seed=1)
    assert agent.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in agent.net.parameters())


def test_auto_is_the_cpu_without_an_accelerator(no_accelerator: None) -> None:
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert available_devices() == ("cpu",)
    assert describe_device(resolve_device("auto")) == "cpu"


def test_auto_prefers_cuda_then_mps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devmod, "mps_available", lambda: True)
    assert resolve_device("auto") == torch.device("mps")


def test_a_missing_device_is_a_one_line_error(no_accelerator: None) -> None:
    with pytest.raises(
        ValueError, match=r"^cuda asked but torch sees no CUDA device \(use --device cpu or auto\)$"
    ):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"^mps asked but torch sees no MPS device"):
        resolve_device("mps")
    with pytest.raises(ValueError, match=r"^unknown device 'tpu': choose one of auto, cpu, cuda, mps$"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="cuda asked"):
        get_agent_class("dqn")(get_agent_class("dqn").config_cls(device="cuda"), Rules(), seed=1)


def test_train_with_a_missing_device_exits_2_with_one_line(
    no_accelerator: None, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["--data-dir", str(tmp_path), "train", "--agent", "dqn", "--device", "cuda", "--episodes", "1"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "cuda asked but torch sees no CUDA device (use --device cpu or auto)"
    )
    assert (
        main(["--data-dir", str(tmp_path), "train", "--agent", "dqn", "--device", "gpu", "--episodes", "1"])
        == 2
    )
    assert "device: must be one of auto, cpu, cuda, mps; got 'gpu'" in capsys.readouterr().err


def test_train_says_which_device_in_its_header(
    no_accelerator: None, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--data-dir", str(tmp_path), "train", "--agent", "dqn", "--episodes", "1", "--envs", "1"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "train dqn run 1 on cpu" in captured.out + captured.err


def _weights(agent: TorchAgent) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy() for k, v in agent.net.state_dict().items()}


def _train(name: str, device: str, seed: int = 3) -> TorchAgent:
    cls = get_agent_class(name)
    agent = cls(cls.config_cls(device=device, **SMALL.get(name, {})), Rules(), seed=seed)
    budget = Budget(episodes=2) if name == "mcts" else Budget(steps=300)
    for _ in agent.train(budget):
        pass
    return agent


@pytest.mark.parametrize("name", ["dqn", "mcts"])
def test_cpu_training_is_deterministic_and_auto_is_the_same_here(name: str, no_accelerator: None) -> None:
    a, b, auto = _train(name, "cpu"), _train(name, "cpu"), _train(name, "auto")
    assert a.counters.updates > 0
    for k, v in _weights(a).items():
        np.testing.assert_array_equal(v, _weights(b)[k])
        np.testing.assert_array_equal(v, _weights(auto)[k])


def test_a_cpu_checkpoint_loads_with_auto(tmp_path: pathlib.Path, no_accelerator: None) -> None:
    agent = _train("dqn", "cpu")
    path = agent.save(tmp_path / "cpu.npz")
    again = load_checkpoint(path, device="auto")
    assert again.config.device == "auto" and again.device == torch.device("cpu")
    for k, v in _weights(agent).items():
        np.testing.assert_array_equal(v, _weights(again)[k])


@pytest.mark.parametrize("name", TORCH_AGENTS)
def test_a_cuda_checkpoint_loads_on_a_machine_without_cuda(
    name: str, tmp_path: pathlib.Path, no_accelerator: None
) -> None:
    """A checkpoint saved by a run with ``device=cuda``: the config says cuda, the weights are plain arrays."""
    cls = get_agent_class(name)
    agent = cls(cls.config_cls(device="cpu"), Rules(), seed=5)
    agent.config = agent.config.replace(device="cuda")  # what a GPU run's checkpoint records
    path = agent.save(tmp_path / "gpu.npz")
    again = load_checkpoint(path)  # the saved device is not here: auto
    assert again.config.device == "auto" and again.device == torch.device("cpu")
    game = Game(board=np.array(BOARD), seed=0)
    assert again.act(game) == agent.act(game)
    for k, v in _weights(agent).items():
        np.testing.assert_array_equal(v, _weights(again)[k])
    with pytest.raises(CheckpointError, match="cuda asked but torch sees no CUDA device"):
        load_checkpoint(path, device="cuda")  # asked for explicitly: refused with the reason


def test_play_specs_load_checkpoints_on_the_cpu(tmp_path: pathlib.Path) -> None:
    cls = get_agent_class("dqn")
    agent = cls(cls.config_cls(device="cpu"), Rules(), seed=5)
    path = agent.save(tmp_path / "a.npz")
    played = AgentSpec("dqn", checkpoint=str(path)).build()
    assert isinstance(played, TorchAgent) and played.device == torch.device("cpu")


ACCELERATORS = [d for d in available_devices() if d != "cpu"]


@pytest.mark.skipif(not ACCELERATORS, reason="no CUDA / MPS device here")
@pytest.mark.parametrize("device", ACCELERATORS)
@pytest.mark.parametrize("name", TORCH_AGENTS)
def test_training_on_an_accelerator_saves_a_checkpoint_the_cpu_loads(
    name: str, device: str, tmp_path: pathlib.Path
) -> None:
    if name == "imitation":
        pytest.skip("imitation trains from a game log (its own tests)")
    agent = _train(name, device) if name in ("dqn", "mcts") else _smoke(name, device)
    assert agent.device.type == device
    assert all(p.device.type == device for p in agent.net.parameters())
    path = agent.save(tmp_path / "acc.npz")
    on_cpu = load_checkpoint(path, device="cpu")
    assert on_cpu.device == torch.device("cpu")
    for k, v in _weights(agent).items():
        np.testing.assert_array_equal(v, _weights(on_cpu)[k])
    game = Game(board=np.array(BOARD), seed=0)
    assert on_cpu.act(game) in game.legal_moves()
    assert agent.act(game) in game.legal_moves()
    back = load_checkpoint(path)  # resumes on the device it was trained on
    assert back.device.type == device
    for _ in back.train(Budget(episodes=1)):
        pass


def _smoke(name: str, device: str) -> TorchAgent:
    cls = get_agent_class(name)
    agent = cls(cls.config_cls(device=device), Rules(), seed=3)
    for _ in agent.train(Budget(episodes=2)):
        pass
    return agent
