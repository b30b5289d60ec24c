"""Go on training an n-tuple checkpoint with other settings, as a new recorded run: the continuation
studies of docs/ntuple-studies.md (what a plateaued network gains from more of the same, from other
restarts, from a second weight stage).

    python scripts/continue_ntuple.py CK --data-dir DIR (--cpu-seconds N | --steps N)
        [--set KNOB=VALUE ...] [--checkpoint-every SECONDS]

The checkpoint's network, learning state (temporal-coherence sums, where it kept them) and counters go
on in a new run of DIR's store (``runs list`` shows it; ``eval --checkpoint`` plays its checkpoints);
the budget counts from here. ``--set`` changes any n-tuple setting but the layout, e.g. ``restart=1``,
``threads=1``, ``lr=0.25``; ``stage_tiles=16384`` adds a weight stage (:meth:`NTupleAgent.add_stages`:
promoted from the first stage's weights when a game first reaches 16384; with ``--promote-now`` a copy
of the first stage at once, its temporal-coherence sums too). Prints the last checkpoint's
path. A checkpoint that is not an n-tuple network's, or a setting it refuses, is a one-line error
(exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.base import Budget  # noqa: E402
from agents.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from agents.config import ConfigError  # noqa: E402
from agents.ntuple import NTupleAgent, NTupleConfig  # noqa: E402
from agents.runner import run_training  # noqa: E402
from engine.store import GameStore  # noqa: E402


class ScriptError(Exception):
    """A one-line error for the user."""


def continued(path: str, settings: list[str], promote_now: bool = False) -> NTupleAgent:
    """The checkpoint's agent with ``settings`` (``KNOB=VALUE`` texts) applied; ``promote_now``: added
    stages start as copies of the last one at once (:meth:`NTupleAgent.add_stages`)."""
    try:
        agent = load_checkpoint(path)
    except (CheckpointError, OSError) as e:
        raise ScriptError(f"{path}: {e}") from None
    if not isinstance(agent, NTupleAgent):
        raise ScriptError(f"{path} is a {type(agent).__name__} checkpoint, not an n-tuple network's")
    names = {s.name for s in NTupleConfig.specs()}
    for text in settings:
        knob, sep, value = text.partition("=")
        knob = knob.strip().replace("-", "_")
        if not sep or knob not in names:
            raise ScriptError(f"--set expects KNOB=VALUE with an n-tuple setting, got {text!r}")
        if knob == "layout":
            raise ScriptError("--set layout: a continued network keeps its tuples")
        try:
            spec = NTupleConfig.spec(knob)
            parsed = spec.check(spec.parse(value.strip()))
            if knob == "stage_tiles":
                agent.add_stages(parsed, promote_now)
            else:
                setattr(agent.config, knob, parsed)
                agent.config.validate()
        except ConfigError as e:
            raise ScriptError(f"--set: {e}") from None
    return agent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--data-dir", required=True, help="the store the new run is recorded in")
    p.add_argument("--cpu-seconds", type=float, help="train until the process has used this CPU time")
    p.add_argument("--steps", type=int, help="train this many moves")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE")
    p.add_argument(
        "--promote-now",
        action="store_true",
        help="stages added with --set stage_tiles=... start as copies of the last stage at once, "
        "with its temporal-coherence sums (its learning rates so far)",
    )
    p.add_argument("--checkpoint-every", type=float, default=600.0, metavar="SECONDS")
    args = p.parse_args(argv)
    try:
        if args.cpu_seconds is None and args.steps is None:
            raise ScriptError("give a budget: --cpu-seconds N or --steps N")
        try:
            budget = Budget(steps=args.steps, cpu_seconds=args.cpu_seconds)
        except ValueError as e:
            raise ScriptError(str(e)) from None
        agent = continued(args.checkpoint, args.set, args.promote_now)
    except ScriptError as e:
        print(f"continue_ntuple.py: {e}", file=sys.stderr)
        return 2
    store = GameStore.open(args.data_dir)
    run = run_training(
        agent, budget, store, checkpoint_every_s=args.checkpoint_every, keep_checkpoints=0, eval_games=0
    )
    for _ in run:
        pass
    print(store.last_checkpoint(run.run_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
