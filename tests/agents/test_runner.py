"""Training runs with a tiny fake learner: events, checkpoints, status, stop, failure, resume, pause."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agents.base import Budget, Control, Counters
from agents.checkpoint import load_checkpoint
from agents.runner import remaining_budget, resume_run, run_training
from engine.store import GameStore
from tests.agents.fake_learner import learner, registered


@pytest.fixture
def store(store: GameStore, monkeypatch: pytest.MonkeyPatch) -> GameStore:
    registered(monkeypatch)
    return store


def test_a_finished_run_logs_every_event_games_and_a_final_checkpoint(
    store: GameStore, data_dir: Path
) -> None:
    run = run_training(learner(), Budget(episodes=6), store, log_every=2)
    events = list(run)
    assert [e.episode for e in events] == [1, 2, 3, 4, 5, 6]
    assert run.status == "finished"
    summary = store.get_run(run.run_id)
    assert summary.status == "finished" and summary.error is None
    assert summary.agent == "fake-learner" and summary.episodes == 6
    metrics = store.run_metrics(run.run_id)
    assert metrics["episode"].tolist() == [1, 2, 3, 4, 5, 6]
    assert metrics["score"].tolist() == [e.metrics["score"] for e in events]
    # Games 2, 4, 6 stored as training samples of this run.
    games = store.list_games(source="training")
    assert len(games) == 3 and run.games_logged == 3
    assert all(g.run_id == run.run_id for g in games)
    # The final checkpoint is under the data dir's checkpoints folder, recorded, and loads.
    assert run.last_checkpoint is not None and run.last_checkpoint.exists()
    assert run.last_checkpoint.is_relative_to(data_dir / "checkpoints")
    cps = store.run_checkpoints(run.run_id)
    assert cps[-1].final and cps[-1].episode == 6 and cps[-1].path == run.last_checkpoint
    again = load_checkpoint(run.last_checkpoint)
    assert again.counters.episodes == 6 and float(again.weights[0]) == 6.0  # type: ignore[attr-defined]


def test_periodic_checkpoints(store: GameStore) -> None:
    run = run_training(learner(pause_s=0.05), Budget(episodes=6), store, checkpoint_every_s=0.1)
    run.run_to_end()
    cps = store.run_checkpoints(run.run_id)
    assert len(cps) >= 3 and not any(c.final for c in cps[:-1]) and cps[-1].final


def test_stop_mid_run_saves_a_checkpoint_that_loads(store: GameStore) -> None:
    control = Control()
    run = run_training(learner(), Budget(episodes=100), store, control)
    seen = []
    for event in run:
        seen.append(event.episode)
        if event.episode == 3:
            control.stop()
    assert seen == [1, 2, 3]
    assert run.status == "stopped" and store.get_run(run.run_id).status == "stopped"
    assert run.last_checkpoint is not None
    agent = load_checkpoint(run.last_checkpoint)
    assert agent.counters.episodes == 3
    assert store.run_checkpoints(run.run_id)[-1].final


def test_closing_the_iterator_stops_the_run(store: GameStore) -> None:
    run = run_training(learner(), Budget(episodes=100), store)
    next(run)
    next(run)
    run.close()
    assert store.get_run(run.run_id).status == "stopped"
    assert run.last_checkpoint is not None and load_checkpoint(run.last_checkpoint).counters.episodes == 2


def test_an_exception_fails_the_run_with_its_message(store: GameStore) -> None:
    run = run_training(learner(fail_at=3), Budget(episodes=10), store)
    with pytest.raises(RuntimeError, match="boom at episode 3"):
        list(run)
    summary = store.get_run(run.run_id)
    assert summary.status == "failed"
    assert summary.error == "RuntimeError: boom at episode 3"
    assert store.run_metrics(run.run_id)["episode"].tolist() == [1, 2]  # what came before is kept


def test_resume_continues_counters_with_the_remaining_budget(store: GameStore) -> None:
    control = Control()
    run = run_training(learner(), Budget(episodes=6), store, control)
    for event in run:
        if event.episode == 2:
            control.stop()
    resumed = resume_run(run.run_id, store)
    assert resumed.run_id == run.run_id and resumed.budget == Budget(episodes=4)
    assert store.get_run(run.run_id).status == "running"
    assert [e.episode for e in resumed] == [3, 4, 5, 6]
    assert store.get_run(run.run_id).status == "finished"
    assert store.run_metrics(run.run_id)["episode"].tolist() == [1, 2, 3, 4, 5, 6]
    assert resumed.last_checkpoint is not None
    assert float(load_checkpoint(resumed.last_checkpoint).weights[0]) == 6.0  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="whole budget"):
        resume_run(run.run_id, store)
    more = resume_run(run.run_id, store, Budget(episodes=1))
    assert [e.episode for e in more] == [7]


def test_resume_refuses_a_live_run_and_a_run_without_checkpoint(store: GameStore) -> None:
    run = run_training(learner(), Budget(episodes=5), store)
    next(run)  # running, no checkpoint yet
    with pytest.raises(ValueError, match="running in another window"):
        resume_run(run.run_id, store)
    store.set_run_status(run.run_id, "stopped")
    with pytest.raises(ValueError, match="no checkpoint"):
        resume_run(run.run_id, store)
    run.close()


def test_metrics_reach_the_store_within_a_second_when_the_agent_goes_quiet(store: GameStore) -> None:
    run = run_training(learner(), Budget(episodes=5), store)
    next(run)  # one event buffered; the agent now "thinks" for a long time (we do not ask for more)
    other = GameStore(store.path)  # another connection, as another process would see it
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and other.get_run(run.run_id).n_events == 0:
            time.sleep(0.05)
        assert other.get_run(run.run_id).n_events == 1
    finally:
        other.close()
        run.close()


def test_pause_marks_the_run_paused_and_saves(store: GameStore) -> None:
    control = Control()
    run = run_training(learner(), Budget(episodes=3), store, control)
    next(run)
    control.pause()
    seen: dict[str, object] = {}

    def look_then_resume() -> None:
        time.sleep(0.3)
        probe = GameStore(store.path)
        try:
            seen["status"] = probe.get_run(run.run_id).status
            seen["checkpoints"] = len(probe.run_checkpoints(run.run_id))
        finally:
            probe.close()
        control.resume()

    t = threading.Thread(target=look_then_resume)
    t.start()
    rest = [e.episode for e in run]  # blocks in the agent's control.checkpoint() while paused
    t.join()
    assert seen == {"status": "paused", "checkpoints": 1}
    assert rest == [2, 3] and run.status == "finished"


def test_non_trainable_agents_are_refused(store: GameStore) -> None:
    from agents.baselines import GreedyAgent

    with pytest.raises(ValueError, match="does not learn"):
        run_training(GreedyAgent(), Budget(episodes=1), store)
    assert store.list_runs() == []


def test_remaining_budget() -> None:
    stored = {
        "episodes": 10,
        "steps": None,
        "seconds": 60.0,
        "start": {"episodes": 5, "steps": 0, "seconds": 1.0},
    }
    assert remaining_budget(stored, Counters(episodes=8, seconds=31.0)) == Budget(episodes=7, seconds=30.0)
    assert remaining_budget(stored, Counters(episodes=15, seconds=2.0)) is None
    assert remaining_budget(stored, Counters(episodes=6, seconds=61.0)) is None
    assert remaining_budget({"seconds": 5.0}, Counters(seconds=1.5)) == Budget(seconds=3.5)


def test_resume_after_a_kill_shows_each_episode_once(store: GameStore) -> None:
    """Events logged after the last checkpoint (then the process died) are replaced, not duplicated."""
    run = run_training(learner(), Budget(episodes=6), store)
    for event in run:
        if event.episode == 2:
            run.save_checkpoint()
        if event.episode == 4:
            break
    # a kill: no final checkpoint, the events of episodes 3-4 are in the store
    run._writer.flush()  # type: ignore[union-attr]
    with pytest.raises(KeyboardInterrupt):
        run._gen.throw(KeyboardInterrupt)  # the runner's Ctrl-C path: stopped, no checkpoint
    assert store.get_run(run.run_id).status == "stopped"
    assert store.run_metrics(run.run_id)["episode"].tolist() == [1, 2, 3, 4]
    resumed = resume_run(run.run_id, store)
    assert store.run_metrics(run.run_id)["episode"].tolist() == [1, 2]
    assert [e.episode for e in resumed] == [3, 4, 5, 6]
    assert store.run_metrics(run.run_id)["episode"].tolist() == [1, 2, 3, 4, 5, 6]


def test_a_diverged_learner_fails_its_run_with_one_line_and_keeps_the_last_good_checkpoint(
    store: GameStore,
) -> None:
    from agents.runner import Diverged

    run = run_training(learner(diverge_at=4), Budget(episodes=100), store, checkpoint_every_s=1e-9)
    with pytest.raises(Diverged, match=r"diverged: loss is nan at step \d+ \(nothing after it is saved\)"):
        list(run)
    summary = store.get_run(run.run_id)
    assert summary.status == "failed" and summary.error is not None
    assert summary.error.startswith("diverged: loss is nan") and "\n" not in summary.error
    # Checkpoints were saved after each good episode (every event is past due here), none after.
    assert [c.episode for c in store.run_checkpoints(run.run_id)] == [1, 2, 3]
    assert load_checkpoint(store.last_checkpoint(run.run_id)).counters.episodes == 3


def test_a_learner_that_stops_making_moves_is_stopped_as_stuck(store: GameStore) -> None:
    from agents.runner import STALL_EPISODES, Diverged

    run = run_training(learner(stall_at=3), Budget(episodes=10**6), store)
    with pytest.raises(Diverged, match=f"stuck: {STALL_EPISODES} episodes in a row without a move"):
        list(run)
    summary = store.get_run(run.run_id)
    assert summary.status == "failed" and summary.episodes < STALL_EPISODES + 5


def test_act_picks_a_legal_move_when_values_are_not_finite() -> None:
    from agents.base import Agent
    from engine import Direction, Game

    class Broken(Agent):
        name = "broken"

        def __init__(self, values):
            super().__init__()
            self.values = values

        def move_values(self, game):
            return {d: self.values(d) for d in game.legal_moves()}

    game = Game(seed=1)
    legal = game.legal_moves()
    assert Broken(lambda d: float("nan")).act(game) == legal[0]
    assert Broken(lambda d: 1.0 if d == legal[-1] else float("nan")).act(game) == legal[-1]
    assert Broken(lambda d: float("inf") if d == legal[0] else 2.0).act(game) in legal[1:]
    assert isinstance(Broken(lambda d: 0.0).act(game), Direction)
