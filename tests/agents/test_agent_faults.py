"""Other people's agents, faults contained and named (issues 45 and 47): ``check-agent`` and ``eval``
with the small faulty agents of :mod:`tests.agents.faulty_agents`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents import conformance
from agents.arena import evaluate
from agents.spec import AgentSpec
from tests.agents import faulty_agents


@pytest.fixture(autouse=True)
def _faulty() -> None:
    faulty_agents.register_all()


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from studio.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ check-agent: the checkpoint


def test_check_agent_names_a_default_set_state_that_restores_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli(["check-agent", "fault-forgetful", "--only", "checkpoint"], capsys)
    line, verdict = out.splitlines()
    assert code == 1 and verdict == "fault-forgetful: 1 check FAILED"
    assert line.split()[:2] == ["FAIL", "checkpoint"]
    assert "array 'weights' differs after a load (4 of 4 values)" in line
    assert "set_state is the base's, which restores nothing, while get_state saves 1 arrays" in line


def test_check_agent_compares_move_values_after_a_load(capsys: pytest.CaptureFixture[str]) -> None:
    # state and moves round trip; only the values on the fixed boards tell the weights were lost
    code, out, _ = cli(["check-agent", "fault-value-forgetful", "--only", "checkpoint"], capsys)
    assert code == 1
    assert out.splitlines()[0].startswith(
        "FAIL  checkpoint    the loaded agent rates the moves otherwise on [[0, 2, 4, 8]"
    )


# ------------------------------------------------------------------ check-agent: wrong return types


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("fault-str-keys", "fault-str-keys.move_values returned keys of type str; expected Direction"),
        ("fault-list", "fault-list.move_values returned a list; expected dict[Direction, float]"),
        ("fault-none", "fault-none.move_values returned a value of type NoneType for left; expected float"),
        (
            "fault-nan",
            "fault-nan.move_values returned a non-finite value (nan) for left; expected a finite float",
        ),
        (
            "fault-raises",
            "fault-raises.act raised ZeroDivisionError: division by zero in my_agent.py line 12",
        ),
        ("fault-review", "fault-review.review_values returned keys of type str; expected Direction"),
    ],
)
def test_check_agent_names_the_agent_the_method_and_the_types(
    agent: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(["check-agent", agent, "--only", "legal moves"], capsys)
    line, verdict = out.splitlines()
    assert code == 1 and verdict == f"{agent}: 1 check FAILED"
    assert line == f"FAIL  legal moves   {message} (at hand-drawn board 1 of 4)"
    assert "Traceback" not in out + err

    code, out, _ = cli(["check-agent", agent, "--only", "legal moves", "--verbose"], capsys)
    assert code == 1 and "Traceback (most recent call last):" in out and out.splitlines()[0] == line


# ------------------------------------------------------------------ check-agent: time limits, progress


def test_a_check_over_its_limit_fails_naming_the_method(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check-agent", "fault-slow", "--only", "legal moves", "--limit", "0.5"], capsys)
    line, verdict = out.splitlines()
    assert code == 1 and verdict == "fault-slow: 1 check FAILED"
    assert line == "FAIL  legal moves   over the 0.5 s limit, in fault-slow.act (hand-drawn board 2 of 4)"


def test_a_long_check_reports_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conformance, "PROGRESS_EVERY_S", 0.2)
    lines: list[str] = []
    result = conformance.run_check("fault-slow", "legal moves", limit_s=30, progress=lines.append)
    assert result.passed is True  # slow, but within the limit
    assert lines and lines[0].startswith("legal moves: 0 s, in fault-slow.act (hand-drawn board")


# ------------------------------------------------------------------ eval: faults contained


def test_eval_keeps_the_others_results_when_a_plugin_plays_an_illegal_move(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--data-dir", str(data_dir), "eval", "--agent", "greedy", "--agent", "fault-illegal"]
    code, out, err = cli([*argv, "--agent", "random", "--games", "3"], capsys)
    assert code == 1
    header = out.splitlines()[0].split()
    assert header == ["greedy", "random"]  # the failed agent has no column; the others have theirs
    assert out.splitlines()[1].split() == ["games", "3", "3"]
    failed = [line for line in err.splitlines() if line.startswith("eval: fault-illegal failed")]
    assert failed == [
        "eval: fault-illegal failed: fault-illegal.move_values rated up, which changes nothing on this "
        "board (legal: left, down, right) (at move 5 of game 0)"
    ]
    assert "Traceback" not in err
    log = (data_dir / "logs" / "studio.log").read_text()
    assert "evaluation of fault-illegal failed" in log and "Traceback (most recent call last)" in log


def test_eval_names_a_plugin_whose_act_raises_in_one_line(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--data-dir",
        str(data_dir),
        "eval",
        "--agent",
        "fault-raises",
        "--agent",
        "greedy",
        "--games",
        "2",
    ]
    code, out, err = cli(argv, capsys)
    assert code == 1 and out.splitlines()[0].split() == ["greedy"]
    assert "Traceback" not in err
    assert (
        "eval: fault-raises failed: fault-raises.act raised ZeroDivisionError: division by zero in "
        "my_agent.py line 12 (at its warm-up move)"
    ) in err.splitlines()


def test_eval_json_carries_the_failure(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    argv = ["--data-dir", str(data_dir), "eval", "--agent", "greedy", "--agent", "fault-nan", "--games", "2"]
    code, out, _ = cli([*argv, "--json", "--no-log"], capsys)
    results = json.loads(out)["results"]
    assert code == 1
    assert [(r["label"], r["games"], r["failure"]) for r in results] == [
        ("greedy", 2, None),
        (
            "fault-nan",
            0,
            "fault-nan.move_values returned a non-finite value (nan) for up; expected a finite float "
            "(at its warm-up move)",
        ),
    ]


def test_a_move_over_the_limit_fails_the_agent(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--data-dir",
        str(data_dir),
        "eval",
        "--agent",
        "fault-slow",
        "--games",
        "1",
        "--move-limit",
        "0.1",
    ]
    code, _, err = cli(argv, capsys)
    assert code == 1
    assert (
        "eval: fault-slow failed: fault-slow.act took 0.3 s over one move; the limit is 0.1 s (at move 0 of game 0)"
        in err.splitlines()
    )


def test_a_fault_in_a_worker_process_fails_the_agent_by_name() -> None:
    spec = AgentSpec(faulty_agents.IllegalAgent.name, target=f"{faulty_agents.MODULE}:IllegalAgent")
    result = evaluate(spec, games=2, seed=0, workers=2)
    assert result.games == 0 and not result.complete
    # whichever worker's game reached its first up-less board first: game 0 at move 5 or game 1
    assert re.fullmatch(
        r"fault-illegal\.move_values rated up, which changes nothing on this board \(legal: [a-z, ]+\) "
        r"\(at move \d+ of game [01]\)",
        result.failure or "",
    ), result.failure


# ------------------------------------------------------------------ huge but finite weights


def test_a_checkpoint_whose_weights_overflow_is_refused_by_name(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from agents.registry import create_agent

    agent = create_agent("td-afterstate", {"hidden": [8]}, seed=1)
    with torch.no_grad():
        for p in agent.net.parameters():  # type: ignore[attr-defined]
            p.fill_(3e38)  # finite, and every move value overflows
    path = agent.save(tmp_path / "huge.npz")
    argv = ["--data-dir", str(data_dir), "eval", "--checkpoint", str(path), "--games", "1", "--no-log"]
    code, out, err = cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "python main.py eval: error: huge.npz does not fit agent 'td-afterstate': its move values are not "
        "finite (inf) on the boards of a seeded game: the weights overflow (largest |weight| 3e+38); the "
        "network diverged"
    ]


def test_check_agent_compares_the_generator_state_it_saves(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["check-agent", "fault-rng-forgetful", "--only", "checkpoint"], capsys)
    assert code == 1
    assert out.splitlines()[0] == (
        "FAIL  checkpoint    the generator state (self.rng) differs after a load: get_state saves it, "
        "set_state must restore it (agents.nn.state.set_numpy_rng_state)"
    )
