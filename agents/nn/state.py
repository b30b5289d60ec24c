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

import math
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
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{key!r} is not numeric ({arr.dtype})")
        if v.is_floating_point():
            if arr.dtype not in (np.float32, np.float64):  # bool / int weights would load and play
                raise ValueError(
                    f"{key!r} has type {arr.dtype}, not float32 or float64 as a network's weights"
                )
            src = np.array(arr, dtype=np.float64 if arr.dtype == np.float64 else np.float32)
            if v.dtype != torch.float64 and src.dtype == np.float64 and src.size:
                with np.errstate(invalid="ignore"):
                    if np.nanmax(np.abs(src)) > np.finfo(np.float32).max:
                        raise ValueError(f"{key!r} holds values past the float32 range")
        else:
            src = np.array(arr, dtype=np.int64)
        new[k] = torch.from_numpy(src).to(v.dtype)
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
    """Restore what :func:`optimizer_state` saved into an optimiser over the same parameters.

    Everything is checked against the optimiser at hand first (ValueError saying what differs), so a
    crafted or foreign state never reaches torch, where it would fail only at the next training step:
    the groups and their parameter numbers, each hyper-parameter's type (flags equal to this
    optimiser's own, numbers finite and >= 0), each state tensor's parameter and shape.
    """
    current = opt.state_dict()["param_groups"]
    params = [p for g in opt.param_groups for p in g["params"]]
    if not isinstance(meta, Mapping):
        raise ValueError("the optimiser state is not an object")
    groups = _checked_groups(meta.get("param_groups"), current)
    state: dict[int, dict[str, Any]] = {}
    head = f"{prefix}state/"
    for key, arr in arrays.items():
        if not key.startswith(head):
            continue
        idx_text, sep, name = key[len(head) :].partition("/")
        if (
            not sep
            or not name
            or not (idx_text.isascii() and idx_text.isdigit())
            or int(idx_text) >= len(params)
        ):
            raise ValueError(f"optimiser entry {key!r} names no parameter of this network")
        idx = int(idx_text)
        a = np.asarray(arr)
        if a.dtype.kind not in "biuf":
            raise ValueError(f"optimiser entry {key!r} is not numeric")
        if name == "step":
            if a.size != 1 or not 0 <= float(a.reshape(-1)[0]) <= 2**53:
                raise ValueError(f"optimiser entry {key!r} is not a step count")
            value = torch.from_numpy(np.array(a, dtype=np.float32))
        else:
            if tuple(a.shape) != tuple(params[idx].shape):
                raise ValueError(
                    f"optimiser entry {key!r} has shape {tuple(a.shape)}, its parameter "
                    f"{tuple(params[idx].shape)}"
                )
            value = torch.from_numpy(np.array(a, dtype=np.float32)).to(params[idx].dtype)
        state.setdefault(idx, {})[name] = value
    scalars = meta.get("scalars", {})
    if not isinstance(scalars, Mapping):
        raise ValueError("the optimiser's scalars are not an object")
    for idx_text, entries in scalars.items():
        if not (str(idx_text).isascii() and str(idx_text).isdigit()) or int(idx_text) >= len(params):
            raise ValueError(f"optimiser scalars {str(idx_text)[:40]!r} name no parameter of this network")
        if not isinstance(entries, Mapping) or not all(_is_number(v) for v in entries.values()):
            raise ValueError(f"optimiser scalars of parameter {idx_text} are not numbers")
        state.setdefault(int(idx_text), {}).update(entries)
    opt.load_state_dict({"state": state, "param_groups": groups})


def networks_state(
    modules: Mapping[str, nn.Module], optimizers: Mapping[str, torch.optim.Optimizer]
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """The arrays of ``modules`` and of ``optimizers``, each under its prefix (the dicts' keys), and
    the optimisers' metadata by prefix: what a learner's checkpoint holds of its networks."""
    arrays: dict[str, np.ndarray] = {}
    metas: dict[str, dict[str, Any]] = {}
    for prefix, module in modules.items():
        arrays.update(module_arrays(module, prefix))
    for prefix, opt in optimizers.items():
        opt_arrays, metas[prefix] = optimizer_state(opt, prefix)
        arrays.update(opt_arrays)
    return arrays, metas


def load_networks_state(
    modules: Mapping[str, nn.Module],
    optimizers: Mapping[str, torch.optim.Optimizer],
    arrays: Mapping[str, np.ndarray],
    metas: Mapping[str, Any],
) -> None:
    """Inverse of :func:`networks_state`, modules first; an optimiser without metadata (None or absent
    from ``metas``) keeps the state it has."""
    for prefix, module in modules.items():
        load_module_arrays(module, arrays, prefix)
    for prefix, opt in optimizers.items():
        meta = metas.get(prefix)
        if meta is not None:
            load_optimizer_state(opt, arrays, meta, prefix)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) <= 1e30


def _checked_groups(saved: Any, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved param groups checked against the optimiser's own (ValueError naming what differs)."""
    if (
        not isinstance(saved, list)
        or len(saved) != len(current)
        or not all(isinstance(g, Mapping) for g in saved)
        or any(
            not isinstance(s.get("params"), list) or len(s["params"]) != len(c["params"])
            for s, c in zip(saved, current)
        )
    ):
        raise ValueError("the optimiser state does not match the network's parameters")
    out = []
    start = 0
    for s, c in zip(saved, current):
        n = len(c["params"])
        if s["params"] != list(range(start, start + n)):
            raise ValueError("the optimiser state numbers its parameters out of order")
        start += n
        group: dict[str, Any] = {}
        for key, value in s.items():
            if key == "params":
                group[key] = list(range(start - n, start))
                continue
            if key not in c:
                # a setting of another torch version, which this one ignores: plain values only
                if value is not None and not isinstance(value, (bool, int, float, str)):
                    raise ValueError(f"optimiser setting {key[:40]!r} is not a plain value")
                group[key] = value
                continue
            mine = c[key]
            if mine is None or isinstance(mine, bool):
                if value != mine or type(value) is not type(mine):
                    raise ValueError(f"optimiser setting {key!r} is {value!r}, this optimiser's {mine!r}")
                group[key] = value
            elif isinstance(mine, (int, float)):
                if not _is_number(value) or value < 0:
                    raise ValueError(f"optimiser setting {key!r} is {value!r}, not a finite number >= 0")
                group[key] = value
            elif isinstance(mine, (tuple, list)):
                if (
                    not isinstance(value, list)
                    or len(value) != len(mine)
                    or not all(_is_number(v) and v >= 0 for v in value)
                ):
                    raise ValueError(f"optimiser setting {key!r} is {value!r}, not {len(mine)} numbers >= 0")
                group[key] = tuple(value) if isinstance(mine, tuple) else list(value)
            else:
                raise ValueError(f"optimiser setting {key!r} cannot be restored")
        out.append(group)
    return out


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
    """Inverse of :func:`numpy_rng_state`; ValueError for a state of another generator or out of range.

    A PCG64 state is checked field by field: its increment must be odd (an even one can make the
    stream stick at zero, and ``integers`` then loops forever), the 128-bit numbers in range.
    """
    own = rng.bit_generator.state
    kind = own["bit_generator"]
    if not isinstance(state, Mapping) or state.get("bit_generator") != kind:
        raise ValueError(f"numpy_rng is not a {kind} generator state")
    if kind == "PCG64":
        inner = state.get("state")
        s, inc = (inner.get("state"), inner.get("inc")) if isinstance(inner, Mapping) else (None, None)
        has, extra = state.get("has_uint32"), state.get("uinteger")
        odd = isinstance(inc, int) and inc % 2 == 1
        if not (
            _whole(s, 2**128 - 1)
            and _whole(inc, 2**128 - 1)
            and odd
            and _whole(has, 1)
            and _whole(extra, 2**32 - 1)
        ):
            raise ValueError("numpy_rng is not a valid PCG64 state")
        rng.bit_generator.state = {
            "bit_generator": kind,
            "state": {"state": s, "inc": inc},
            "has_uint32": has,
            "uinteger": extra,
        }
        return
    try:
        rng.bit_generator.state = dict(state)
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise ValueError(f"numpy_rng is not a valid {kind} state ({e})") from None


def _whole(v: Any, high: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= high
