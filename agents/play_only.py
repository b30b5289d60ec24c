"""Whether this process only plays: evaluation and arena workers, Ray players, a run's evaluator.

Such a process says so once, at its start (:func:`set_play_only`), before it builds an agent. Torch
learners then leave out what only training needs when they are built or loaded: their optimiser, whose
construction imports ``torch._dynamo`` (over a CPU-second of every worker's start on this project's
machine). A checkpoint's optimiser state is then checked and applied at the first training step
instead of at load; the process that handed the worker its agent built and loaded that agent already,
every check included. Torch-free, so that a worker can set it before anything loads torch.
"""

from __future__ import annotations

_play_only = False


def set_play_only(on: bool = True) -> None:
    """Mark this process as one that only plays agents (or, ``on=False``, not: the default)."""
    global _play_only
    _play_only = bool(on)


def play_only() -> bool:
    """Whether :func:`set_play_only` marked this process."""
    return _play_only
