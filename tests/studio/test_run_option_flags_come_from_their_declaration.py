"""``train`` and ``sweep`` make their run option flags from the declaration (agents/run/options.py):
each flag gives its field in the field's unit, its default is the declared one, and its range is the
declared range."""

from __future__ import annotations

import pytest

from agents.run.options import RunOptions
from studio.commands import _agent_flags as flags
from studio.commands import sweep as sweep_command
from studio.commands import train as train_command
from studio.services.runs import RunRequest


def train_request(argv: list[str]) -> RunRequest:
    args = train_command.build_parser(flags.first_stage(argv)).parse_args(argv)
    return train_command.request_from_args(args)


def test_the_train_flags_give_each_option_in_its_fields_unit() -> None:
    request = train_request(
        [
            "--agent",
            "greedy",
            "--episodes",
            "3",
            "--checkpoint-every",
            "30",
            "--log-every",
            "0",
            "--eval-games",
            "5",
            "--eval-seed",
            "7",
            "--eval-every-minutes",
            "1.5",
            "--eval-every-episodes",
            "50",
            "--keep-checkpoints",
            "1",
            "--max-checkpoint-mb",
            "2.5",
        ]
    )
    assert request.options() == RunOptions(
        checkpoint_every_s=30.0,
        log_every=0,
        eval_games=5,
        eval_seed=7,
        eval_every_s=90.0,
        eval_every_episodes=50,
        keep_checkpoints=1,
        max_checkpoint_mb=2.5,
    )
    assert (request.agent, request.eval_at_end) == ("greedy", False)


def test_without_option_flags_a_request_has_the_declared_defaults() -> None:
    request = train_request(["--agent", "greedy", "--episodes", "3"])
    assert request.options() == RunOptions()
    assert (request.checkpoint_every_s, request.eval_every_s, request.eval_games) == (300.0, 600.0, 20)


@pytest.mark.parametrize(
    "argv",
    [
        ["--eval-games", "100001"],
        ["--checkpoint-every", "0"],
        ["--max-checkpoint-mb", "0"],
        ["--eval-seed", "-1"],
        ["--eval-every-minutes", "nan"],
    ],
)
def test_a_flag_out_of_its_declared_range_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        train_request(["--agent", "greedy", *argv])
    assert "out of range" in capsys.readouterr().err


def test_the_sweep_takes_its_three_options_from_the_same_flags() -> None:
    argv = [
        "--agent",
        "greedy",
        "--episodes",
        "1",
        "--point=",
        "--checkpoint-every",
        "45",
        "--eval-games",
        "4",
        "--eval-seed",
        "9",
    ]
    args = sweep_command.build_parser(flags.first_stage(argv)).parse_args(argv)
    request = sweep_command.request_from_args(args)
    assert (request.checkpoint_every_s, request.eval_games, request.eval_seed) == (45.0, 4, 9)
    assert not hasattr(args, "keep_checkpoints")  # a sweep keeps what its trials need
