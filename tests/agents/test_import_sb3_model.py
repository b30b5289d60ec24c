"""``python main.py import-model``: SB3 / sb3-contrib ``model.save()`` zips trained outside the studio become
studio checkpoints (no unpickling), and hostile or unfitting zips are refused in one line, exit 2."""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.checkpoint import load_checkpoint, read_checkpoint
from engine import Game
from engine.boards import game_exponents
from engine.env import Game2048Env
from studio.cli import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("stable_baselines3") is None or importlib.util.find_spec("sb3_contrib") is None,
    reason="Stable-Baselines3 is not installed (pip install -e .[sb3])",
)


def _boards(n: int = 6) -> np.ndarray:
    """Exponent boards from a few random games, some of them late (large tiles)."""
    out = []
    rng = np.random.default_rng(0)
    for seed in range(n):
        game = Game(seed=seed)
        for _ in range(int(rng.integers(0, 120))):
            if game.game_over:
                break
            game.step(int(rng.choice(np.flatnonzero(game.legal_mask()))))
        out.append(game_exponents(game))
    return np.stack(out)


def _import(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data_dir), "import-model", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_ppo_trained_elsewhere_imports_and_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from stable_baselines3 import PPO

    # trained the way anyone would, outside the studio: SB3's MlpPolicy on the Gymnasium env
    model: Any = PPO(
        "MlpPolicy",
        Game2048Env(),
        n_steps=64,
        batch_size=32,
        n_epochs=2,
        gamma=0.97,
        policy_kwargs={"net_arch": [32, 16]},
        seed=1,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=256)
    model.save(tmp_path / "elsewhere.zip")

    code, out, err = _import(capsys, tmp_path, str(tmp_path / "elsewhere.zip"))
    assert (code, err) == (0, "")
    path = Path(out.strip())
    assert path == tmp_path / "checkpoints" / "imported" / "elsewhere.npz" and path.is_file()
    meta, _ = read_checkpoint(path)
    assert meta["agent"] == "sb3-ppo"
    assert meta["config"]["hidden"] == [32, 16] and meta["config"]["activation"] == "tanh"
    assert meta["config"]["gamma"] == pytest.approx(0.97) and meta["config"]["n_steps"] == 64
    assert meta["counters"]["steps"] == 256

    # the same policy and critic, to the last bit
    agent: Any = load_checkpoint(path, device="cpu")
    boards = _boards()
    obs = torch.as_tensor(boards)
    with torch.no_grad():
        model.policy.set_training_mode(False)
        probs = model.policy.get_distribution(obs).distribution.probs.numpy()
        values = model.policy.predict_values(obs).reshape(-1).double().numpy()
    mine = agent.action_values(boards, np.ones((len(boards), 4), dtype=bool)).cpu().numpy()
    np.testing.assert_array_equal(mine, probs)
    np.testing.assert_array_equal(agent.critic_values(boards), values)

    # a second import of the same name does not overwrite the first
    code, out, _ = _import(capsys, tmp_path, str(tmp_path / "elsewhere.zip"))
    assert code == 0 and Path(out.strip()).name == "elsewhere-2.npz"

    # eval takes it like any checkpoint
    assert (
        main(["--data-dir", str(tmp_path), "eval", "--checkpoint", str(path), "--games", "2", "--json"]) == 0
    )
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["games"] == 2 and result["mean_score"] > 0


@pytest.mark.parametrize(
    ("algo", "policy_kwargs", "agent_name"),
    [
        ("A2C", {}, "sb3-a2c"),
        ("DQN", {"net_arch": [16]}, "sb3-dqn"),
        (
            "MaskablePPO",
            {"net_arch": {"pi": [16], "vf": [16]}, "activation_fn": torch.nn.ReLU},
            "sb3-maskppo",
        ),
    ],
)
def test_each_algorithm_becomes_its_agent_with_the_same_outputs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    algo: str,
    policy_kwargs: dict[str, Any],
    agent_name: str,
):
    import sb3_contrib
    import stable_baselines3

    cls = getattr(sb3_contrib if algo == "MaskablePPO" else stable_baselines3, algo)
    model = cls("MlpPolicy", Game2048Env(), policy_kwargs=policy_kwargs, seed=2, device="cpu", verbose=0)
    model.save(tmp_path / "m.zip")
    code, out, err = _import(capsys, tmp_path, str(tmp_path / "m.zip"))
    assert (code, err) == (0, "")
    agent: Any = load_checkpoint(out.strip(), device="cpu")
    assert agent.name == agent_name
    boards = _boards()
    obs = torch.as_tensor(boards)
    with torch.no_grad():
        model.policy.set_training_mode(False)
        if algo == "DQN":
            want = model.policy.q_net(obs).numpy()
        else:
            want = model.policy.get_distribution(obs).distribution.probs.numpy()
    got = agent.action_values(boards, np.ones((len(boards), 4), dtype=bool)).cpu().numpy()
    np.testing.assert_array_equal(got, want)


def test_a_ppo_model_may_become_maskable_ppo_but_not_dqn(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from stable_baselines3 import PPO

    PPO("MlpPolicy", Game2048Env(), policy_kwargs={"net_arch": [8]}, device="cpu").save(tmp_path / "p.zip")
    code, out, _ = _import(capsys, tmp_path, str(tmp_path / "p.zip"), "--agent", "sb3-maskppo")
    assert code == 0 and read_checkpoint(out.strip())[0]["agent"] == "sb3-maskppo"
    code, out, err = _import(capsys, tmp_path, str(tmp_path / "p.zip"), "--agent", "sb3-dqn")
    assert (code, out) == (2, "")
    assert (
        err
        == "python main.py import-model: error: p.zip: its policy is for sb3-ppo; its weights do not fit sb3-dqn\n"
    )


# ------------------------------------------------------------------------------------------ hostile


@pytest.fixture
def good_zip(tmp_path: Path) -> Path:
    from stable_baselines3 import PPO

    path = tmp_path / "good.zip"
    PPO("MlpPolicy", Game2048Env(), policy_kwargs={"net_arch": [8]}, device="cpu").save(path)
    return path


def _rewrite(src: Path, dst: Path, replace: dict[str, bytes | None]) -> Path:
    """``src`` with members replaced (None: left out)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if name in replace:
                if replace[name] is not None:
                    zout.writestr(name, replace[name])  # type: ignore[arg-type]
            else:
                zout.writestr(name, zin.read(name))
    return dst


class Boom:
    """Would run when unpickled (it must never be)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path("/tmp/pwned-by-import-model").touch, ())


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path) -> str:
    code, out, err = _import(capsys, tmp_path, str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("python main.py import-model: error: ")
    assert not (tmp_path / "checkpoints" / "imported").exists() or not any(
        (tmp_path / "checkpoints" / "imported").iterdir()
    )
    return err


def test_a_pickle_where_json_belongs_is_refused_unread(tmp_path, capsys, good_zip):
    bad = _rewrite(good_zip, tmp_path / "pickled.zip", {"data": pickle.dumps({"x": Boom()})})
    err = _refused(capsys, tmp_path, bad)
    assert "pickled.zip: its data is a pickle, not JSON; refused" in err
    assert not Path("/tmp/pwned-by-import-model").exists()


def test_a_pickled_object_in_policy_pth_is_refused(tmp_path, capsys, good_zip):
    raw = io.BytesIO()
    torch.save({"action_net.weight": Boom()}, raw)
    bad = _rewrite(good_zip, tmp_path / "evil.zip", {"policy.pth": raw.getvalue()})
    err = _refused(capsys, tmp_path, bad)
    assert "evil.zip: its policy.pth is not plain tensors; refused" in err
    assert not Path("/tmp/pwned-by-import-model").exists()


def test_a_missing_policy_pth_is_refused(tmp_path, capsys, good_zip):
    bad = _rewrite(good_zip, tmp_path / "nopolicy.zip", {"policy.pth": None})
    err = _refused(capsys, tmp_path, bad)
    assert err.endswith("nopolicy.zip has no policy.pth: not a model saved by SB3's model.save()\n")


def test_a_model_of_other_spaces_is_refused(tmp_path, capsys):
    import gymnasium as gym
    from stable_baselines3 import PPO

    PPO("MlpPolicy", gym.make("CartPole-v1"), device="cpu").save(tmp_path / "cartpole.zip")
    err = _refused(capsys, tmp_path, tmp_path / "cartpole.zip")
    assert "cartpole.zip: its observations have shape [4], not a board's" in err


def test_weights_that_do_not_fit_their_net_arch_are_refused(tmp_path, capsys, good_zip):
    data = json.loads(zipfile.ZipFile(good_zip).read("data"))
    data["policy_kwargs"] = {"net_arch": [9]}  # the weights are 8 wide
    bad = _rewrite(good_zip, tmp_path / "widths.zip", {"data": json.dumps(data).encode()})
    err = _refused(capsys, tmp_path, bad)
    assert "widths.zip: its 'mlp_extractor.policy_net.0.weight' has shape (8, 16)" in err


def test_a_custom_feature_extractor_is_refused(tmp_path, capsys, good_zip):
    data = json.loads(zipfile.ZipFile(good_zip).read("data"))
    data["policy_kwargs"] = {":serialized:": "gAR9lC4=", "features_extractor_class": "<class 'mine.Net'>"}
    bad = _rewrite(good_zip, tmp_path / "custom.zip", {"data": json.dumps(data).encode()})
    assert "custom.zip: its feature extractor \"<class 'mine.Net'>\" is code stored as a pickle" in _refused(
        capsys, tmp_path, bad
    )


def test_a_file_that_is_no_zip_is_refused(tmp_path, capsys):
    path = tmp_path / "notes.zip"
    path.write_text("hello")
    assert _refused(capsys, tmp_path, path).endswith("notes.zip is not an SB3 model (not a zip archive)\n")


def test_a_corrupted_member_is_refused_as_damaged(tmp_path, capsys, good_zip):
    raw = bytearray(good_zip.read_bytes())
    at = raw.find(b"policy.pth") + 200  # inside the stored weights: their CRC no longer matches
    raw[at] ^= 0xFF
    bad = tmp_path / "flipped.zip"
    bad.write_bytes(bytes(raw))
    assert "flipped.zip is damaged: Bad CRC-32 for file 'policy.pth'" in _refused(capsys, tmp_path, bad)
