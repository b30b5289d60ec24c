"""What a sweep's backend is given and what it yields, named (both the local and the Ray backend use
them; a module of their own so that neither backend imports the other's module)."""

from __future__ import annotations

from typing import NamedTuple

from studio.services.messages import ChildMessage
from studio.services.runs import RunRequest

__all__ = ["TrialJob", "TrialMessage"]


class TrialJob(NamedTuple):
    """A trial for a backend to run: its index in the sweep and its run's request."""

    trial: int
    request: RunRequest


class TrialMessage(NamedTuple):
    """What a backend yields: a trial and what its run says (a training child's message:
    ``Started`` / ``Events`` / ``CheckpointSaved`` / ``Done`` / ``Failed``)."""

    trial: int
    message: ChildMessage
