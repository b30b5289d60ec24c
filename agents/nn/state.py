"""Torch state <-> plain numpy arrays + JSON metadata, for :mod:`agents.checkpoint` (never a pickle).

A module's ``state_dict`` is already a flat name -> tensor map. An optimiser's is nested
(``{"state": {param_index: {"step": t, "exp_avg": t, ...}}, "param_groups": [{...}]}``): tensors are
flattened to arrays named ``<prefix>state/<param_index>/<key>``, everything else (hyper-parameters,
non-tensor entries) goes to JSON metadata.

Seeding: :func:`seed_torch` seeds torch's global generator (weight initialisation, dropout masks);
agents draw that seed from their own numpy generator (whose state checkpoints keep) so that one agent
seed fixes everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn


def module_arrays(module: nn.Module, prefix: str) -> dict[str, np.ndarray]:
    """``{prefix + name: array}`` for every parameter and buffer (copies, on the CPU)."""
    return {prefix + k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


def load_module_arrays(module: nn.Module, arrays: Mapping[str, np.ndarray], prefix: str) -> None:
    """Inverse of :func:`module_arrays`; ValueError naming the first missing or misshapen entry."""
    own = module.state_dict()
    new = {}
    for k, v in own.items():
        key = prefix + k
        if key not in arrays:
            raise ValueError(f"checkpoint lacks {key!r}")
        arr = np.asarray(arrays[key])
        if tuple(arr.shape) != tuple(v.shape):
            raise ValueError(f"{key!r} has shape {tuple(arr.shape)}, the network expects {tuple(v.shape)}")
        new[k] = torch.from_numpy(np.array(arr, dtype=arr.dtype)).to(v.dtype)
    module.load_state_dict(new)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, torch.Tensor):
        return v.item() if v.numel() == 1 else v.tolist()
    return v


def optimizer_state(
    opt: torch.optim.Optimizer, prefix: str = "opt/"
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """An optimiser's state as arrays + JSON meta (round-trips through :func:`load_optimizer_state`)."""
    sd = opt.state_dict()
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for idx, entry in sd["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                arrays[f"{prefix}state/{idx}/{key}"] = value.detach().cpu().numpy().copy()
            else:
                scalars.setdefault(str(idx), {})[key] = _jsonable(value)
    meta = {
        "param_groups": _jsonable(sd["param_groups"]),
        "scalars": scalars,
    }
    return arrays, meta


def load_optimizer_state(
    opt: torch.optim.Optimizer,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
    prefix: str = "opt/",
) -> None:
    """Restore what :func:`optimizer_state` saved into an optimiser over the same parameters."""
    state: dict[int, dict[str, Any]] = {}
    head = f"{prefix}state/"
    for key, arr in arrays.items():
        if not key.startswith(head):
            continue
        idx, name = key[len(head) :].split("/", 1)
        state.setdefault(int(idx), {})[name] = torch.from_numpy(np.array(arr))
    for idx, entries in meta.get("scalars", {}).items():
        state.setdefault(int(idx), {}).update(entries)
    groups = [dict(g) for g in meta["param_groups"]]
    for g in groups:
        if "betas" in g and isinstance(g["betas"], list):
            g["betas"] = tuple(g["betas"])
    current = opt.state_dict()["param_groups"]
    if len(groups) != len(current) or any(
        len(a["params"]) != len(b["params"]) for a, b in zip(groups, current)
    ):
        raise ValueError("the optimiser state does not match the network's parameters")
    opt.load_state_dict({"state": state, "param_groups": groups})


# ------------------------------------------------------------------------------------------------ RNGs


def seed_torch(seed: int) -> None:
    """Seed torch's global generator (weight init, dropout); use a seed drawn from the agent's rng."""
    torch.manual_seed(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)


def draw_seed(rng: np.random.Generator) -> int:
    """A 63-bit seed from a numpy generator."""
    return int(rng.integers(0, 2**63 - 1))


def numpy_rng_state(rng: np.random.Generator) -> dict[str, Any]:
    """JSON-able state of a numpy Generator (Python ints of any size survive JSON)."""
    state: dict[str, Any] = _jsonable(rng.bit_generator.state)
    return state


def set_numpy_rng_state(rng: np.random.Generator, state: Mapping[str, Any]) -> None:
    rng.bit_generator.state = dict(state)
