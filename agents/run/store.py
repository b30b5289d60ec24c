"""What a run needs from the game store: :class:`RunStore`, a protocol so that tests may pass a fake."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agents.base import MetricEvent
    from engine import Rules
    from engine.records import GameTrace


class RunStore(Protocol):
    """The :class:`engine.store.GameStore` methods a run calls while it trains."""

    @property
    def path(self) -> Path: ...

    def create_run(
        self,
        agent: str,
        config: Mapping[str, Any],
        rules: Rules,
        budget: Mapping[str, Any],
        seed: int | None = None,
        *,
        status: str = "running",
    ) -> int: ...

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None: ...

    def claim_run(self, run_id: int) -> None: ...

    def log_metrics(self, run_id: int, events: Sequence[MetricEvent]) -> None: ...

    def add_checkpoint(
        self, run_id: int, path: Path, episode: int, step: int, final: bool = False
    ) -> int: ...

    def set_checkpoint_eval(self, checkpoint_id: int, eval_score: float) -> bool: ...

    def prune_checkpoints(self, run_id: int, keep_last: int, protect: Sequence[int] = ()) -> list[Path]: ...

    def record_trace(
        self,
        trace: GameTrace,
        source: str,
        agent: str | None = None,
        checkpoint: str | None = None,
        *,
        run_id: int | None = None,
    ) -> int: ...
