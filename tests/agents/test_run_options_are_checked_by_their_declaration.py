"""A run's options are declared once (agents/run/options.py): each is checked against its declared
range, and a bad one names its field, before any run is made."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from agents.run.errors import RunError
from agents.run.options import MAX_EVAL_GAMES, RunOptions, option_spec, option_specs


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"eval_games": MAX_EVAL_GAMES + 1}, "eval_games", "evaluation games must be between 0 and 100,000"),
        ({"eval_seed": 2**62 + 1}, "eval_seed", "evaluation seed must be between 0 and"),
        (
            {"checkpoint_every_s": 0.0},
            "checkpoint_every_s",
            "seconds between checkpoints must be more than 0",
        ),
        ({"eval_every_s": math.nan}, "eval_every_s", "seconds between evaluations must be between 0"),
        ({"log_every": -1}, "log_every", "log every N-th game must be >= 0 (0 = none), got -1"),
        (
            {"max_checkpoint_mb": 0.0},
            "max_checkpoint_mb",
            "the checkpoint size limit must be more than 0 and at most 1,048,576 MB, got 0",
        ),
        ({"eval_every_s": 0.0, "eval_every_episodes": None}, "eval_every_s", "need a cadence"),
    ],
)
def test_an_option_out_of_its_declared_range_is_refused_naming_its_field(
    changes: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(RunError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        dataclasses.replace(RunOptions(), **changes).check()
    assert info.value.field == field


def test_the_edges_of_each_declared_range_are_accepted() -> None:
    RunOptions().check()
    RunOptions(eval_games=MAX_EVAL_GAMES, eval_seed=2**62, log_every=0, keep_checkpoints=0).check()
    RunOptions(eval_games=0, eval_every_s=None, eval_every_episodes=None).check()  # no evaluation at all
    RunOptions(max_checkpoint_mb=float(1 << 20), eval_every_s=0.0, eval_at_end=True).check()


def test_every_option_is_declared_with_what_its_front_ends_need() -> None:
    names = [s.name for s in option_specs()]
    assert names == [f.name for f in dataclasses.fields(RunOptions)]
    for spec in option_specs():
        assert spec.what, spec.name
        if spec.flag is not None:
            assert spec.help and spec.metavar, spec.name
    assert (
        option_spec("eval_every_s").flag == "--eval-every-minutes" and option_spec("eval_every_s").per == 60
    )
    assert option_spec("eval_at_end").flag is None  # a sweep's, not the user's
