"""A run's checkpoint files: saving one (never with NaN weights), marking the best, and keeping the
newest ``keep`` files plus the best and the one being evaluated (older ones are deleted)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.base import Agent
from agents.run.errors import Diverged
from agents.run.store import RunStore
from engine.paths import checkpoints_dir


@dataclass(eq=False)
class RunCheckpoints:
    """The checkpoints of run ``run_id`` of ``agent``: ``last`` / ``last_id`` (the newest, or None),
    ``best`` (the best evaluated one saved here, or None). ``keep``: files kept besides the best
    (0 = all); ``protected()``: ids retention must not delete now (a file being evaluated)."""

    store: RunStore
    run_id: int
    agent: Agent
    keep: int
    protected: Callable[[], Sequence[int]] = lambda: ()
    last: Path | None = field(default=None, init=False)
    last_id: int | None = field(default=None, init=False)
    best: Path | None = field(default=None, init=False)

    def folder(self) -> Path:
        return checkpoints_dir(self.store.path.parent) / f"run-{self.run_id}"

    def save(self, *, final: bool = False) -> Path:
        """Save the agent as the run's newest checkpoint. A network holding NaN or an infinity is never
        saved (:class:`Diverged` instead): the last good checkpoint stays the one a resume starts from."""
        from agents.checkpoint import NonFiniteWeights, save_checkpoint

        c = self.agent.counters
        path = self.folder() / f"{self.agent.name}-ep{c.episodes}-step{c.steps}.npz"
        try:
            save_checkpoint(self.agent, path, require_finite=True)
        except NonFiniteWeights as e:
            raise Diverged(
                f"diverged: {self.agent.name}'s {e.entry!r} holds NaN or infinite values at step {c.steps:,} "
                "(nothing after it is saved)"
            ) from None
        self.last_id = self.store.add_checkpoint(self.run_id, path, c.episodes, c.steps, final=final)
        self.last = path
        self.prune()
        return path

    def scored(self, checkpoint_id: int, path: Path, eval_score: float) -> bool:
        """Record checkpoint ``checkpoint_id``'s evaluation; True when it became the run's best."""
        best = self.store.set_checkpoint_eval(checkpoint_id, eval_score)
        if best:
            self.best = path
        self.prune()  # the previous best may go now
        return best

    def prune(self) -> None:
        """Keep the newest ``keep`` files, the best, and the protected ones."""
        if self.keep > 0:
            self.store.prune_checkpoints(self.run_id, self.keep, protect=self.protected())
