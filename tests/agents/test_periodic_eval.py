"""Periodic greedy evaluation of a training run: background evaluator, best checkpoint, retention."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.arena import evaluate
from agents.base import Budget, Control, MetricEvent
from agents.runner import (
    EVAL_METRICS,
    RunError,
    TrainingRun,
    evaluate_checkpoint,
    evaluation_metrics,
    resume_run,
    run_training,
)
from agents.spec import AgentSpec
from engine.store import GameStore
from engine.store.model import format_size
from tests.agents.fake_learner import TARGET, learner, registered

GAMES = 4


@pytest.fixture
def store(store: GameStore, monkeypatch: pytest.MonkeyPatch) -> GameStore:
    registered(monkeypatch)
    return store


def patiently(run: TrainingRun, timeout: float = 120.0) -> Iterator[MetricEvent]:
    """The run's events, the consumer waiting after each one while an evaluation plays (so a busy
    machine skips none of them and the test knows how many to expect)."""
    for event in run:
        yield event
        if run.evaluating:
            # the evaluator's pipe turns readable when its result is there; the run reads it next step
            assert run._evaluator._conn.poll(timeout), "the evaluation did not finish"


def evaluations(events: list[MetricEvent]) -> list[MetricEvent]:
    return [e for e in events if e.kind == "evaluation"]


def test_a_run_evaluates_every_n_episodes_in_the_background_with_the_same_games(store: GameStore) -> None:
    run = run_training(
        learner(), Budget(episodes=9), store, eval_games=GAMES, eval_every_s=None, eval_every_episodes=3
    )
    events = list(patiently(run))
    assert run.status == "finished"
    evals = evaluations(events)
    assert [e.episode for e in evals] == [3, 6, 9] and run.evaluations == 3 and run.evaluations_skipped == 0
    for e in evals:
        assert set(e.metrics) == set(EVAL_METRICS)
        assert e.metrics["eval_games"] == GAMES
        assert e.metrics["eval_score"] > 0 and e.metrics["eval_max_tile"] >= 4
        assert e.metrics["eval_2048_rate"] == 0.0 and e.metrics["eval_moves"] > 0
        assert "greedy games" in e.message
    # The fake learner's play does not depend on its weights: every evaluation plays the same seeds,
    # so every one gives the same figures.
    figures = [{k: v for k, v in e.metrics.items() if k != "eval_seconds"} for e in evals]
    assert figures[1:] == figures[:-1]
    # Stored with the run's metrics, at the evaluated checkpoint's counters; the run's own counters
    # stay those of its last training event.
    cols = store.run_metrics(run.run_id, kinds=["evaluation"])
    assert cols["episode"].tolist() == [3, 6, 9]
    assert cols["eval_games"].tolist() == [GAMES] * 3
    assert cols["eval_score"].tolist() == [e.metrics["eval_score"] for e in evals]
    summary = store.get_run(run.run_id)
    assert summary.episodes == 9 and summary.last_metrics["eval_score"] == evals[-1].metrics["eval_score"]
    # The first evaluated checkpoint is the best (ties keep the earlier), and its score is stored.
    best = store.best_checkpoint(run.run_id)
    assert best is not None and best.episode == 3 and best.eval_score == evals[0].metrics["eval_score"]
    assert run.best_checkpoint == best.path and best.path.exists()


def test_the_evaluation_is_the_eval_code_path_and_repeats_exactly(store: GameStore) -> None:
    run = run_training(learner(), Budget(episodes=3), store, eval_games=0)
    run.run_to_end()
    path = run.last_checkpoint
    assert path is not None
    first = evaluate_checkpoint(path, GAMES, seed=0, agent="fake-learner", target=TARGET)
    second = evaluate_checkpoint(path, GAMES, seed=0, agent="fake-learner", target=TARGET)
    for key in ("scores", "max_tiles", "moves"):
        assert first[key] == second[key] and len(first[key]) == GAMES
    # what `eval --checkpoint FILE --games 4 --seed 0` plays
    direct = evaluate(AgentSpec.from_checkpoint(path, "fake-learner"), GAMES, 0)
    assert direct.scores.tolist() == first["scores"]
    metrics = evaluation_metrics(first["scores"], first["max_tiles"], first["moves"], 1.5)
    assert metrics["eval_score"] == pytest.approx(direct.mean_score)
    assert metrics["eval_games"] == GAMES and metrics["eval_seconds"] == 1.5
    other = evaluate_checkpoint(path, GAMES, seed=1, agent="fake-learner", target=TARGET)
    assert other["scores"] != first["scores"]  # another seed, other games


def test_retention_keeps_the_newest_and_the_best_and_disk_use_adds_up(store: GameStore) -> None:
    run = run_training(
        learner(),
        Budget(episodes=12),
        store,
        checkpoint_every_s=1e-9,  # a checkpoint after every episode
        eval_games=GAMES,
        eval_every_s=None,
        eval_every_episodes=2,
        keep_checkpoints=2,
    )
    events = list(patiently(run))
    assert [e.episode for e in evaluations(events)] == [2, 4, 6, 8, 10, 12]
    cps = store.run_checkpoints(run.run_id)
    best = store.best_checkpoint(run.run_id)
    assert best is not None and best.episode == 2  # all score the same: the first stays best
    # the best, then the newest two (the periodic one at episode 12 and the final one)
    assert [c.episode for c in cps] == [2, 12, 12] and cps[-1].final
    assert [c.best for c in cps] == [True, False, False]
    assert all(c.path.exists() for c in cps)
    files = sorted(p for p in run.checkpoint_dir().iterdir())
    assert files == sorted({c.path for c in cps})  # older files deleted
    assert store.run_disk_use(run.run_id) == sum(p.stat().st_size for p in files) > 0


def test_an_evaluation_due_while_one_plays_is_skipped(store: GameStore) -> None:
    run = run_training(
        learner(pause_s=0.01),
        Budget(episodes=6),
        store,
        eval_games=GAMES,
        eval_every_s=None,
        eval_every_episodes=1,
    )
    events = list(run)  # nobody waits: the evaluator is still starting when the next ones are due
    assert run.evaluations_skipped >= 1
    evals = evaluations(events)
    # one evaluator at a time; the one in flight when the budget is used is waited for
    assert 1 <= len(evals) == run.evaluations <= 6 - run.evaluations_skipped
    assert all(e.metrics["eval_games"] == GAMES for e in evals)


def test_a_stopped_run_does_not_wait_for_its_evaluation(store: GameStore) -> None:
    control = Control()
    run = run_training(
        learner(),
        Budget(episodes=100),
        store,
        control,
        eval_games=GAMES,
        eval_every_s=None,
        eval_every_episodes=2,
    )
    t0 = time.monotonic()
    for event in run:
        if event.episode == 2:
            assert run.evaluating
            control.stop()
    assert run.status == "stopped" and not run.evaluating
    assert time.monotonic() - t0 < 30
    assert store.best_checkpoint(run.run_id) is None  # its evaluation never finished


def test_a_resumed_run_goes_on_evaluating_and_its_best_must_be_beaten(store: GameStore) -> None:
    kw = {"eval_games": GAMES, "eval_every_s": None, "eval_every_episodes": 2}
    run = run_training(learner(), Budget(episodes=2), store, **kw)
    list(patiently(run))
    first = store.best_checkpoint(run.run_id)
    assert first is not None and first.episode == 2
    resumed = resume_run(run.run_id, store, Budget(episodes=2), **kw)
    events = list(patiently(resumed))
    assert [e.episode for e in evaluations(events)] == [4]
    best = store.best_checkpoint(run.run_id)
    assert best is not None and best.id == first.id  # a tie does not replace it
    assert resumed.best_checkpoint is None
    cols = store.run_metrics(run.run_id, kinds=["evaluation"])
    assert cols["episode"].tolist() == [2, 4]


def test_a_failed_evaluation_is_an_info_event_and_training_goes_on(
    store: GameStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_training(
        learner(), Budget(episodes=4), store, eval_games=GAMES, eval_every_s=None, eval_every_episodes=2
    )
    monkeypatch.setattr(run._evaluator, "target", "tests.agents.no_such_module:Nothing")
    monkeypatch.setattr(run._evaluator, "agent", "no-such-agent")
    events = list(patiently(run))
    assert run.status == "finished" and events[-1].episode == 4
    failed = [e for e in events if e.kind == "info" and "evaluation at episode" in e.message]
    assert failed and all("failed" in e.message and "\n" not in e.message for e in failed)
    assert store.best_checkpoint(run.run_id) is None and not evaluations(events)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"eval_games": -1}, "eval_games"),
        ({"eval_every_s": -5.0}, "eval_every_s"),
        ({"eval_every_episodes": -1}, "eval_every_episodes"),
        ({"eval_every_s": 0.0, "eval_every_episodes": 0}, "eval_every_s"),
        ({"keep_checkpoints": -1}, "keep_checkpoints"),
        ({"eval_seed": -1}, "eval_seed"),
    ],
)
def test_bad_evaluation_settings_are_refused_before_a_run_is_made(
    store: GameStore, kw: dict[str, object], field: str
) -> None:
    with pytest.raises(RunError) as info:
        run_training(learner(), Budget(episodes=1), store, **kw)  # type: ignore[arg-type]
    assert info.value.field == field and store.list_runs() == []


def test_the_cli_flags_make_the_request_and_runs_show_names_the_best(
    store: GameStore, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from studio.cli import main
    from studio.commands.train import request_from_args
    from studio.services.runs import RunRequest

    defaults = RunRequest(agent="fake-learner")
    assert (defaults.eval_games, defaults.eval_every_s, defaults.eval_every_episodes) == (20, 600.0, None)
    assert (defaults.eval_seed, defaults.keep_checkpoints) == (0, 3)
    run = run_training(
        learner(), Budget(episodes=4), store, eval_games=GAMES, eval_every_s=None, eval_every_episodes=2
    )
    list(patiently(run))
    best = store.best_checkpoint(run.run_id)
    assert best is not None
    size = store.run_disk_use(run.run_id)
    assert main(["--data-dir", str(data_dir), "runs", "show", str(run.run_id)]) == 0
    out = capsys.readouterr().out
    assert f"best checkpoint: {best.id} (episode 2, evaluation mean score" in out
    assert " best " in out and "EVAL" in out and f"checkpoint files: {format_size(size)} on disk" in out
    assert main(["--data-dir", str(data_dir), "runs", "list"]) == 0
    listing = capsys.readouterr().out
    assert "DISK" in listing and "EVAL" in listing and format_size(size) in listing
    args = _train_args(
        data_dir,
        "--agent fake-learner --episodes 3 --eval-games 5 --eval-every-minutes 0.5 --eval-every-episodes 7 "
        "--eval-seed 9 --keep-checkpoints 1",
    )
    req = request_from_args(args)
    assert (
        req.eval_games,
        req.eval_every_s,
        req.eval_every_episodes,
        req.eval_seed,
        req.keep_checkpoints,
    ) == (
        5,
        30.0,
        7,
        9,
        1,
    )


def _train_args(data_dir: Path, line: str):  # type: ignore[no-untyped-def]
    import argparse

    from studio.commands.train import build_parser

    first = argparse.Namespace(agent=["fake-learner"], preset=[])
    args = build_parser(first).parse_args(line.split())
    args.data_dir = str(data_dir)
    return args


def test_a_real_learner_is_evaluated_from_its_checkpoint(store: GameStore) -> None:
    from agents.ntuple.agent import NTupleAgent, NTupleConfig

    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=3)
    run = run_training(
        agent, Budget(episodes=4), store, eval_games=2, eval_every_s=None, eval_every_episodes=4
    )
    events = list(patiently(run))
    (ev,) = evaluations(events)
    assert ev.episode == 4 and ev.metrics["eval_games"] == 2 and ev.metrics["eval_score"] > 0
    best = store.best_checkpoint(run.run_id)
    assert best is not None and best.eval_score == ev.metrics["eval_score"]
    again = evaluate_checkpoint(best.path, 2, seed=0)  # the same two games, played here
    assert sum(again["scores"]) / 2 == ev.metrics["eval_score"]


def test_a_run_asked_to_evaluate_at_its_end_ends_with_that_evaluation_of_its_last_checkpoint(
    store: GameStore,
) -> None:
    run = run_training(
        learner(), Budget(episodes=5), store, eval_games=GAMES, eval_every_s=0, eval_at_end=True
    )
    events = list(run)
    assert run.status == "finished" and run.evaluations == 1
    closing = evaluations(events)
    assert len(closing) == 1 and events[-1] is closing[0] and closing[0].episode == 5
    # the same games as an evaluation of that checkpoint anywhere else: the one figure a sweep ranks by
    best = store.best_checkpoint(run.run_id)
    assert best is not None and best.episode == 5 and best.eval_score == closing[0].metrics["eval_score"]
    again = evaluate_checkpoint(best.path, GAMES, agent="fake-learner", target=TARGET)
    assert closing[0].metrics["eval_score"] == pytest.approx(sum(again["scores"]) / GAMES)


def test_no_closing_evaluation_after_a_stop_or_when_the_last_periodic_one_covered_the_end(
    store: GameStore,
) -> None:
    control = Control()
    run = run_training(
        learner(), Budget(episodes=50), store, control, eval_games=GAMES, eval_every_s=0, eval_at_end=True
    )
    for event in run:
        if event.episode >= 2:
            control.stop()
    assert run.status == "stopped" and run.evaluations == 0
    run = run_training(
        learner(),
        Budget(episodes=6),
        store,
        eval_games=GAMES,
        eval_every_s=None,
        eval_every_episodes=3,
        eval_at_end=True,
    )
    events = list(patiently(run))
    assert [e.episode for e in evaluations(events)] == [3, 6]  # episode 6 is evaluated once


def test_evaluation_needs_a_cadence_unless_it_is_only_the_closing_one(store: GameStore) -> None:
    with pytest.raises(RunError, match="cadence"):
        run_training(learner(), Budget(episodes=1), store, eval_games=GAMES, eval_every_s=0)
    run_training(
        learner(), Budget(episodes=1), store, eval_games=GAMES, eval_every_s=0, eval_at_end=True
    ).run_to_end()
