"""A model trained elsewhere, from SB3's ``model.save()`` zip, as a studio SB3 agent (never unpickled).

SB3's zip holds ``data`` (JSON: the hyper-parameters, the spaces, the policy class; objects JSON cannot
hold are stored as pickles under ``":serialized:"``, next to plain text of their attributes) and
``policy.pth`` (the policy's ``state_dict``, written by ``torch.save``). :func:`import_sb3_model` reads
only the plain JSON fields it needs and loads ``policy.pth`` with ``torch.load(weights_only=True)``:
nothing in the file runs. What would need a pickle (a custom feature extractor, a schedule-only
setting) is refused in one line, as is anything else that does not fit (:class:`ModelImportError`).

The weights go into the studio agent the zip's policy matches (``sb3-ppo``, ``sb3-a2c``, ``sb3-dqn``,
``sb3-maskppo``), built with the zip's network (widths, activation) and its plain hyper-parameters,
which is then saved as a studio checkpoint: Play, the Arena, eval and review use it like a trained one.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

import torch

from agents.config import ConfigError
from agents.registry import get_agent_class
from agents.sb3.agents import SB3Agent
from engine import Rules

#: ``data`` is tens of kilobytes; a bigger one is not SB3's.
MAX_DATA_BYTES = 16 << 20
#: ``policy.pth``: a network of up to ~250 M float32 parameters.
MAX_POLICY_BYTES = 1 << 30

#: the studio agent each SB3 policy module stands for (PPO and A2C share one: told apart by their data)
POLICY_MODULES = {
    "stable_baselines3.common.policies": "actor-critic",
    "sb3_contrib.common.maskable.policies": "maskable",
    "stable_baselines3.dqn.policies": "dqn",
}
FAMILY = {
    "sb3-ppo": "actor-critic",
    "sb3-a2c": "actor-critic",
    "sb3-maskppo": "actor-critic",
    "sb3-dqn": "dqn",
}
ACTIVATIONS = {
    "<class 'torch.nn.modules.activation.ReLU'>": "relu",
    "<class 'torch.nn.modules.activation.Tanh'>": "tanh",
}
FLATTEN = "<class 'stable_baselines3.common.torch_layers.FlattenExtractor'>"
#: policy_kwargs that change nothing the studio's network computes when it plays (training details)
HARMLESS_KWARGS = (
    "ortho_init",
    "normalize_images",
    "share_features_extractor",
    "optimizer_kwargs",
    "optimizer_class",
)
#: SB3's data key -> the studio knob it becomes, copied when the knob accepts the value
HYPER: dict[str, str] = {
    "gamma": "gamma",
    "max_grad_norm": "max_grad_norm",
    "learning_rate": "lr",
    "n_envs": "n_envs",
    "n_steps": "n_steps",
    "gae_lambda": "gae_lambda",
    "ent_coef": "ent_coef",
    "vf_coef": "vf_coef",
    "normalize_advantage": "normalize_advantage",
    "batch_size": "batch_size",
    "n_epochs": "n_epochs",
    "buffer_size": "buffer_size",
    "learning_starts": "learning_starts",
    "tau": "tau",
    "gradient_steps": "gradient_steps",
    "target_update_interval": "target_update_interval",
    "exploration_initial_eps": "eps_start",
    "exploration_final_eps": "eps_end",
}
#: The studio's ``raw`` encoder divides the exponents by ``planes``; SB3's MlpPolicy (FlattenExtractor)
#: feeds them undivided. The imported first layers are multiplied by this power of two, so that
#: (w * 16) * (x / 16) == w * x exactly in floating point: the same outputs to the last bit.
PLANES = 16


class ModelImportError(ValueError):
    """A model file import-model cannot use; the message (one line) names the file and why."""


def import_sb3_model(path: str | Path, agent: str | None = None) -> SB3Agent:
    """The SB3 model saved at ``path`` as a studio agent (``agent``: which ``sb3-*``; default: the one its
    policy and hyper-parameters name). ModelImportError, one line, for anything that does not fit."""
    path = Path(path)
    name = path.name
    data, weights = _read_zip(path)
    rules = _rules_of(data, name)
    chosen = _agent_of(data, name, agent)
    cls: type[SB3Agent] = get_agent_class(chosen)  # type: ignore[assignment]
    config = _config_of(cls, data, name)
    try:
        built = cls(config, rules, seed=0)
    except (ValueError, TypeError) as e:
        raise ModelImportError(f"{name}: cannot build {chosen} with its settings: {e}") from None
    _load_weights(built, weights, name, chosen)
    steps = data.get("num_timesteps")
    if _whole(steps):
        built.model.num_timesteps = built.counters.steps = int(steps)
    updates = data.get("_n_updates")
    if _whole(updates):
        built.counters.updates = int(updates)
        if hasattr(built.model, "_n_updates"):
            built.model._n_updates = int(updates)
    return built


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


# ------------------------------------------------------------------------------------------ the zip


def _read_zip(path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    name = path.name
    if not path.is_file():
        raise ModelImportError(f"no model file at {path}")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ModelImportError(f"{name} is not an SB3 model (not a zip archive)") from None
    except OSError as e:
        raise ModelImportError(f"{name} cannot be read: {e.strerror or e}") from None
    try:
        with zf:
            data_raw = _member(zf, "data", MAX_DATA_BYTES, name)
            policy_raw = _member(zf, "policy.pth", MAX_POLICY_BYTES, name)
    except ModelImportError:
        raise
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        RuntimeError,
        ValueError,
        NotImplementedError,
        zlib.error,
    ) as e:
        # a bad CRC, a truncated member, an unknown compression: all mean the same to the user
        raise ModelImportError(f"{name} is damaged: {e or type(e).__name__}") from None
    if data_raw[:1] == b"\x80":  # a pickle's protocol opcode: SB3 writes JSON here
        raise ModelImportError(
            f"{name}: its data is a pickle, not JSON; refused (import-model never unpickles)"
        )
    try:
        data = json.loads(data_raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ModelImportError(f"{name}: its data is not SB3's JSON ({type(e).__name__}); refused") from None
    if not isinstance(data, dict):
        raise ModelImportError(f"{name}: its data is not SB3's JSON object; refused")
    try:
        weights = torch.load(io.BytesIO(policy_raw), map_location="cpu", weights_only=True)
    except Exception as e:  # weights_only refuses any global it does not know: every failure means the same
        first = " ".join(str(e).split())[:160]
        raise ModelImportError(f"{name}: its policy.pth is not plain tensors; refused ({first})") from None
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise ModelImportError(f"{name}: its policy.pth is not a state_dict of tensors; refused")
    for key, tensor in weights.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelImportError(f"{name}: its weight {key!r} holds NaN or an infinity; refused")
    return data, weights


def _member(zf: zipfile.ZipFile, member: str, limit: int, name: str) -> bytes:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise ModelImportError(f"{name} has no {member}: not a model saved by SB3's model.save()") from None
    if info.file_size > limit:
        raise ModelImportError(f"{name}: its {member} declares {info.file_size:,} bytes, more than {limit:,}")
    with zf.open(info) as fh:
        raw = fh.read(limit + 1)  # never more than the limit, whatever the header says
    if len(raw) > limit:
        raise ModelImportError(f"{name}: its {member} inflates past {limit:,} bytes; refused")
    return raw


# ---------------------------------------------------------------------------------------- the spaces


def _plain(data: Mapping[str, Any], key: str, name: str) -> Any:
    if key not in data:
        raise ModelImportError(f"{name}: its data lacks {key!r}")
    return data[key]


def _ints_of(text: Any) -> list[int] | None:
    """The whole numbers of a numpy array's text (SB3 stores ``low`` / ``high`` that way), or None."""
    if not isinstance(text, str) or len(text) > 100_000 or not re.fullmatch(r"[\[\]\s0-9]*", text):
        return None
    return [int(x) for x in re.findall(r"[0-9]+", text)]


def _rules_of(data: Mapping[str, Any], name: str) -> Rules:
    """The board the model was trained on, from its spaces: they must be Game2048Env's."""
    obs = _plain(data, "observation_space", name)
    act = _plain(data, "action_space", name)
    want = "Game2048Env's spaces: Box(0, rows*cols+1, (rows, cols), uint8) and Discrete(4)"
    if not isinstance(obs, dict) or not str(obs.get(":type:", "")).endswith("spaces.box.Box'>"):
        raise ModelImportError(f"{name}: its observation space is not a Box; the studio's env has {want}")
    shape = obs.get("_shape")
    if not (isinstance(shape, list) and len(shape) == 2 and all(_whole(n) for n in shape)):
        raise ModelImportError(f"{name}: its observations have shape {shape!r}, not a board's; {want}")
    rows, cols = shape
    try:
        rules = Rules(rows=rows, cols=cols)
    except ValueError as e:
        raise ModelImportError(
            f"{name}: its observations are {rows}x{cols} boards, which the studio cannot play ({e})"
        ) from None
    high = min(255, rows * cols + 1)
    low_v, high_v = _ints_of(obs.get("low")), _ints_of(obs.get("high"))
    if (
        obs.get("dtype") != "uint8"
        or low_v is None
        or high_v is None
        or set(low_v) != {0}
        or set(high_v) != {high}
        or len(low_v) != rows * cols
        or len(high_v) != rows * cols
    ):
        raise ModelImportError(
            f"{name}: its observation space ({obs.get('dtype')!r}, low {obs.get('low')!r}, high "
            f"{obs.get('high')!r}) is not the studio's: {want}"
        )
    if (
        not isinstance(act, dict)
        or not str(act.get(":type:", "")).endswith("spaces.discrete.Discrete'>")
        or act.get("n") != "4"
        or act.get("start", "0") != "0"
    ):
        raise ModelImportError(
            f"{name}: its action space is not Discrete(4) (n {act.get('n') if isinstance(act, dict) else act!r}); {want}"
        )
    return rules


# ------------------------------------------------------------------------------- agent and settings


def _agent_of(data: Mapping[str, Any], name: str, asked: str | None) -> str:
    policy = _plain(data, "policy_class", name)
    module = policy.get("__module__") if isinstance(policy, dict) else None
    kind = POLICY_MODULES.get(module) if isinstance(module, str) else None
    if kind is None:
        raise ModelImportError(
            f"{name}: its policy comes from {module!r}; import-model reads PPO, A2C, DQN and MaskablePPO "
            "models with SB3's own policies"
        )
    if kind == "maskable":
        inferred = "sb3-maskppo"
    elif kind == "dqn":
        inferred = "sb3-dqn"
    else:  # PPO and A2C share the policy; only PPO has epochs and a clip range
        inferred = "sb3-ppo" if "n_epochs" in data or "clip_range" in data else "sb3-a2c"
    if asked is None:
        return inferred
    if asked not in FAMILY:
        raise ModelImportError(f"--agent {asked} is not an SB3 agent (one of {', '.join(FAMILY)})")
    if FAMILY[asked] != FAMILY[inferred]:
        raise ModelImportError(f"{name}: its policy is for {inferred}; its weights do not fit {asked}")
    return asked


def _network_of(data: Mapping[str, Any], name: str, dqn: bool) -> tuple[tuple[int, ...], str]:
    """Hidden widths and activation, from ``policy_kwargs`` (SB3's defaults where absent)."""
    kwargs = data.get("policy_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise ModelImportError(f"{name}: its policy_kwargs is not an object")
    # a dict holding a class is pickled whole; SB3 writes its entries beside it as plain text / JSON
    plain = {k: v for k, v in kwargs.items() if k not in (":type:", ":serialized:")}
    hidden: Any = [64, 64]
    activation = "relu" if dqn else "tanh"
    for key, value in plain.items():
        if key == "net_arch":
            if isinstance(value, dict):
                if set(value) - {"pi", "vf", "qf"} or len({json.dumps(v) for v in value.values()}) != 1:
                    raise ModelImportError(
                        f"{name}: its net_arch {value!r} has different actor and critic widths; the studio's "
                        "SB3 agents use one list for both"
                    )
                value = next(iter(value.values()))
            hidden = value
        elif key == "activation_fn":
            if value not in ACTIVATIONS:
                raise ModelImportError(f"{name}: its activation {value!r} is not ReLU or Tanh; refused")
            activation = ACTIVATIONS[value]
        elif key == "features_extractor_class":
            if value != FLATTEN:
                raise ModelImportError(
                    f"{name}: its feature extractor {value!r} is code stored as a pickle; import-model "
                    "rebuilds SB3's MlpPolicy (FlattenExtractor) only"
                )
        elif key == "features_extractor_kwargs":
            if value not in ({}, None):
                raise ModelImportError(
                    f"{name}: its features_extractor_kwargs {value!r} are not FlattenExtractor's"
                )
        elif key not in HARMLESS_KWARGS:
            raise ModelImportError(f"{name}: its policy_kwargs {key!r} is not one import-model can rebuild")
    if not (isinstance(hidden, list) and hidden and all(_whole(n) and n >= 1 for n in hidden)):
        raise ModelImportError(f"{name}: its net_arch {hidden!r} is not a list of layer widths")
    return tuple(hidden), activation


def _config_of(cls: type[SB3Agent], data: Mapping[str, Any], name: str) -> Any:
    hidden, activation = _network_of(data, name, cls.name == "sb3-dqn")
    # The env's own reward (the score gained, unscaled): the critic's units, which review relies on.
    network = {
        "encoder": "raw",
        "planes": PLANES,
        "hidden": hidden,
        "activation": activation,
        "reward": "score",
        "reward_scale": 1.0,
    }
    try:
        config = cls.config_cls.from_dict(network)
    except ConfigError as e:
        raise ModelImportError(f"{name}: its network does not fit {cls.name}: {e}") from None
    hyper: dict[str, Any] = {}
    knobs = {s.name: s for s in cls.config_cls.specs()}
    for key, knob_name in HYPER.items():
        value = data.get(key)
        if knob_name not in knobs or value is None:
            continue
        try:  # a value the knob refuses (a schedule, out of range) keeps the studio's default
            hyper[knob_name] = knobs[knob_name].check(value)
        except ConfigError:
            continue
    try:
        return config.replace(**hyper)
    except ConfigError:  # the copied settings disagree with each other: the network alone still plays
        return config


# ------------------------------------------------------------------------------------------ weights


def _first_layers(agent: SB3Agent) -> list[str]:
    """The weights that read the features (scaled by :data:`PLANES`, see there)."""
    if agent.name == "sb3-dqn":
        return ["q_net.q_net.0.weight", "q_net_target.q_net.0.weight"]
    return ["mlp_extractor.policy_net.0.weight", "mlp_extractor.value_net.0.weight"]


def _load_weights(agent: SB3Agent, weights: dict[str, torch.Tensor], name: str, chosen: str) -> None:
    policy: Any = agent.model.policy
    own = policy.state_dict()
    missing = sorted(set(own) - set(weights))
    extra = sorted(set(weights) - set(own))
    if missing or extra:
        what = f"lacks {missing[0]!r}" if missing else f"has {extra[0]!r}, which {chosen} has not"
        raise ModelImportError(f"{name}: its policy does not fit {chosen} ({what}); refused")
    for key, tensor in weights.items():
        if tuple(tensor.shape) != tuple(own[key].shape):
            raise ModelImportError(
                f"{name}: its {key!r} has shape {tuple(tensor.shape)}, {chosen} with these spaces and "
                f"widths expects {tuple(own[key].shape)}; refused"
            )
        if tensor.dtype != own[key].dtype:
            raise ModelImportError(f"{name}: its {key!r} is {tensor.dtype}, not {own[key].dtype}; refused")
    scaled = dict(weights)
    for key in _first_layers(agent):
        scaled[key] = weights[key] * PLANES
    policy.load_state_dict(scaled)
