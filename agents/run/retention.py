"""A run's checkpoint files: saving one (never with NaN weights), marking the best, and keeping the
newest ``keep`` files plus the best and the one being evaluated (older ones are deleted).

Only the newest file is what a resume loads. The others (the best, the older ones kept) are for play,
evaluation and review, so they lose what only a resume needs: the arrays an agent names in its
``resume_only_arrays`` (the n-tuple network's temporal-coherence sums, half of its file).
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from agents.base import Agent
from agents.run.errors import Diverged
from agents.run.store import RunStore
from engine.fsutil import atomic_write
from engine.paths import checkpoints_dir


def drop_arrays(path: Path, names: Sequence[str]) -> int:
    """Rewrite checkpoint ``path`` without the arrays ``names`` (atomically); the bytes it saved (0 when
    it held none of them). The other entries are copied as they are, metadata included."""
    entries = {f"{n}.npy" for n in names}
    before = path.stat().st_size
    with zipfile.ZipFile(path) as zin:
        infos = zin.infolist()
        if not any(i.filename in entries for i in infos):
            return 0

        def write(fh: IO[bytes]) -> None:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zout:
                for info in infos:
                    if info.filename not in entries:
                        with zin.open(info) as src, zout.open(info, "w", force_zip64=True) as dst:
                            shutil.copyfileobj(src, dst, 1 << 20)

        atomic_write(path, write)
    return before - path.stat().st_size


@dataclass(eq=False)
class RunCheckpoints:
    """The checkpoints of run ``run_id`` of ``agent``: ``last`` / ``last_id`` (the newest, or None),
    ``best`` (the best evaluated one saved here, or None). ``keep``: files kept besides the best
    (0 = all); ``protected()``: ids retention must not delete now (a file being evaluated).
    ``limits``: (warning size, limit) in bytes (:func:`agents.run.settings.checkpoint_limits`); a file
    past the limit is not written, one past the warning size is; either way a line for the run's log
    waits in ``notices`` (the warning once a run)."""

    store: RunStore
    run_id: int
    agent: Agent
    keep: int
    protected: Callable[[], Sequence[int]] = lambda: ()
    limits: tuple[int, int] | None = None
    notices: list[str] = field(default_factory=list, init=False)
    _warned: bool = field(default=False, init=False)
    #: the step whose checkpoint was refused last: the final save right after it is not said twice
    _refused_at: int | None = field(default=None, init=False)
    last: Path | None = field(default=None, init=False)
    last_id: int | None = field(default=None, init=False)
    best: Path | None = field(default=None, init=False)
    #: files saved by this run here, by checkpoint id, not yet stripped of their resume-only arrays
    _full: dict[int, Path] = field(default_factory=dict, init=False)

    def folder(self) -> Path:
        return checkpoints_dir(self.store.path.parent) / f"run-{self.run_id}"

    def save(self, *, final: bool = False) -> Path | None:
        """Save the agent as the run's newest checkpoint. A network holding NaN or an infinity is never
        saved (:class:`Diverged` instead): the last good checkpoint stays the one a resume starts from.
        None when the file would be past the size limit: nothing saved, the run goes on (a notice)."""
        from agents.checkpoint import CheckpointTooLarge, NonFiniteWeights, mb, save_checkpoint

        c = self.agent.counters
        path = self.folder() / f"{self.agent.name}-ep{c.episodes}-step{c.steps}.npz"
        warn, limit = self.limits if self.limits is not None else (None, None)
        try:
            save_checkpoint(self.agent, path, require_finite=True, max_bytes=limit)
        except CheckpointTooLarge as e:
            if self._refused_at != c.steps:
                self._refused_at = c.steps
                self.notices.append(
                    f"checkpoint at step {c.steps:,} refused: {e} (raise the checkpoint size limit to keep it)"
                )
            return None
        except NonFiniteWeights as e:
            raise Diverged(
                f"diverged: {self.agent.name}'s {e.entry!r} holds NaN or infinite values at step {c.steps:,} "
                "(nothing after it is saved)"
            ) from None
        size = path.stat().st_size
        if warn is not None and limit is not None and size > warn and not self._warned:
            self._warned = True
            self.notices.append(
                f"warning: checkpoint at step {c.steps:,} is {mb(size)}, near the {mb(limit)} size limit"
            )
        self.last_id = self.store.add_checkpoint(self.run_id, path, c.episodes, c.steps, final=final)
        self.last = path
        self._full[self.last_id] = path
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
        """Keep the newest ``keep`` files, the best, and the protected ones; the kept files but the
        newest lose their resume-only arrays (see :meth:`slim`)."""
        if self.keep > 0:
            self.store.prune_checkpoints(self.run_id, self.keep, protect=self.protected())
        self.slim()

    def slim(self) -> None:
        """Strip the agent's ``resume_only_arrays`` from every file of this run but the newest (what a
        resume loads) and those being evaluated now (their turn comes at a later prune)."""
        names = tuple(getattr(self.agent, "resume_only_arrays", ()))
        busy = set(self.protected())
        for cid, path in list(self._full.items()):
            if path == self.last or cid in busy:
                continue
            if names and path.exists():
                drop_arrays(path, names)
            del self._full[cid]  # stripped, deleted by retention, or nothing to strip
