"""Which torch device a learner trains on: the ``device`` knob (auto / cpu / cuda / mps) of every torch learner.

``auto`` takes an accelerator where torch sees one that works (CUDA, then Apple's MPS), else the CPU.
Asking for a device torch does not see is a one-line :class:`ValueError`, never a silent fallback: a run
that was meant for a GPU should not quietly take ten times as long on the CPU.

Checkpoints never record tensors' devices (weights are saved as CPU numpy arrays, see
:mod:`agents.nn.state`), so any checkpoint loads on any device.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from agents.config import knob

#: the values of the ``device`` knob
DEVICES = ("auto", "cpu", "cuda", "mps")


def device_knob() -> Any:
    """The ``device`` field every torch learner's config declares (one declaration, same help everywhere)."""
    return knob(
        "auto",
        "torch device for training: auto takes CUDA or MPS where torch sees one, else the CPU",
        choices=DEVICES,
        advanced=True,
    )


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def available_devices() -> tuple[str, ...]:
    """The concrete devices torch can use here, CPU first."""
    out = ["cpu"]
    if torch.cuda.is_available():
        out.append("cuda")
    if mps_available():
        out.append("mps")
    return tuple(out)


def resolve_device(name: str | torch.device | None = "auto") -> torch.device:
    """The torch device for a ``device`` knob value; ValueError (one line) when it is not available."""
    text = "auto" if name is None else str(name)
    kind = text.split(":", 1)[0]
    if kind == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("cuda asked but torch sees no CUDA device (use --device cpu or auto)")
        return torch.device(text)
    if kind == "mps":
        if not mps_available():
            raise ValueError("mps asked but torch sees no MPS device (use --device cpu or auto)")
        return torch.device("mps")
    raise ValueError(f"unknown device {text!r}: choose one of {', '.join(DEVICES)}")


def describe_device(device: torch.device) -> str:
    """A readable name: ``cuda (NVIDIA H100 80GB HBM3)``, ``mps``, ``cpu``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda ({torch.cuda.get_device_name(index)})"
    return device.type


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter or buffer (CPU for a module with neither)."""
    for param in module.parameters():
        return param.device
    for buf in module.buffers():
        return buf.device
    return torch.device("cpu")


def threads_knob() -> Any:
    """The ``threads`` field of a torch learner's config (one declaration, same help everywhere)."""
    return knob(
        1,
        "torch threads while training (0: leave torch's setting); small nets run fastest on one",
        low=0,
        high=256,
        advanced=True,
    )


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Torch's intra-op threads set to ``threads`` for a while (0: unchanged), then restored.

    A batch of a few hundred boards through a small MLP is too little work to split: on a 2-core
    machine shared with other work, two OpenMP threads spinning at every layer's barrier made PPO's
    moves per CPU-second 5x fewer than one thread did.
    """
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
