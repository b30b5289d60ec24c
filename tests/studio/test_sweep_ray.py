"""Sweeps on Ray Tune: the relay store (no Ray needed), a grid ranked as on local processes, stop and resume.

Ray is an optional extra: the tests that run trials on Ray are skipped without ``ray[tune]``; the relay
store is plain Python and tested everywhere.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from agents.base import Budget
from engine.store import GameStore
from studio.services.messages import CheckpointSaved, Events
from studio.services.runs import RunRequest, open_run, resolve
from studio.services.sweep import SweepFinished, TrialDone, rank_sweep, run_sweep
from studio.services.sweep_ray import RelayStore, RunSink
from tests.studio.test_sweep import tiny

ROOT = Path(__file__).resolve().parents[2]
#: Columns that hold wall-clock figures: two runs of the same seed differ there, and only there.
WALL_CLOCK = ("elapsed", "eval_seconds", "steps_per_s")


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray.tune")
    import ray

    started = not ray.is_initialized()
    if started:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    yield ray
    if started:
        ray.shutdown()


def _same_history(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        if name in WALL_CLOCK:
            assert len(a[name]) == len(b[name])
            continue
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


# ---------------------------------------------------------------------------------- relay store


def test_a_run_through_the_relay_store_leaves_the_same_record_as_a_run_in_the_store(tmp_path):
    # td-afterstate: one event per episode (the n-tuple learner's events are time slices, so two runs
    # of one seed learn the same but cut their history differently), and events that carry games
    request = RunRequest(
        agent="td-afterstate",
        budget=Budget(episodes=8),
        seed=5,
        eval_games=1,
        eval_every_s=0.0,
        eval_at_end=True,
        checkpoint_every_s=0.05,  # many checkpoints, so that pruning is replayed too
        keep_checkpoints=1,
        log_every=2,
    )
    with GameStore(tmp_path / "direct" / "s.sqlite3") as direct:
        run = open_run(request, direct)
        assert run.run_to_end() == "finished"
        want_id = run.run_id
        want = direct.run_metrics(want_id)
        direct_summary = direct.get_run(want_id)
        want_cps = [
            (c.episode, c.step, c.final, c.eval_score, c.best) for c in direct.run_checkpoints(want_id)
        ]
        want_games = [(g.score, g.n_moves) for g in direct.list_games(run_id=want_id)]
        assert run.games_logged == len(want_games) == 4

    with (
        GameStore(tmp_path / "trial" / "scratch.sqlite3") as scratch,
        GameStore(tmp_path / "driver" / "s.sqlite3") as real,
    ):
        relay = RelayStore(scratch)
        run = open_run(request, relay)
        assert run.run_to_end() == "finished"
        stored = resolve(request).stored()
        run_id = real.create_run(
            stored["agent"], stored["config"], stored["rules"], stored["budget"], stored["seed"]
        )
        sink = RunSink(real, run_id)
        messages = sink.apply(relay.take())
        assert relay.take() == []
        _same_history(want, real.run_metrics(run_id))
        summary = real.get_run(run_id)
        assert (summary.status, summary.seed) == ("finished", 5)
        assert summary.episodes == direct_summary.episodes == request.budget.episodes
        assert scratch.run_metrics(run.run_id)["step"].size == 0  # the trial keeps no history itself
        cps = real.run_checkpoints(run_id)
        assert [(c.episode, c.step, c.final, c.eval_score, c.best) for c in cps][-1] == want_cps[-1]
        assert all(c.path.is_file() for c in cps)
        # what the store does not list is gone from the run's folder: pruning was replayed
        assert {p.name for p in sink.checkpoint_dir().iterdir()} == {c.path.name for c in cps}
        assert sink.last_checkpoint == cps[-1].path and sink.status == "finished"
        assert sink.games_logged == len(want_games)
        assert [(g.score, g.n_moves) for g in real.list_games(run_id=run_id)] == want_games
        kinds = {type(m) for m in messages}
        assert kinds == {Events, CheckpointSaved}
        assert sum(len(m.events) for m in messages if isinstance(m, Events)) == len(want["step"])


# ------------------------------------------------------------------------------------------ Ray


def _points(store, sweep_id):
    metric, points = rank_sweep(store, sweep_id)
    return metric, [(p.rank, p.params, p.values) for p in points]


def test_a_four_trial_grid_on_ray_ranks_as_on_local_processes(tmp_path, ray_cluster):
    with GameStore(tmp_path / "local" / "s.sqlite3") as store:
        events = list(run_sweep(tiny(workers=2), store))
        local = _points(store, events[0].sweep_id)
    with GameStore(tmp_path / "ray" / "s.sqlite3") as store:
        events = list(run_sweep(tiny(workers=2, backend="ray"), store))
        sid = events[0].sweep_id
        kinds = [e.kind for e in events]
        assert events[-1].kind == "finished" and events[-1].status == "finished"
        assert kinds.count("started") == 4 and kinds.count("done") == 4 and "progress" in kinds
        assert all(e.error is None for e in events if isinstance(e, TrialDone | SweepFinished))
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        assert len(store.list_runs()) == 4
        for t in trials:
            run = store.get_run(t.run_id)
            assert run.config["lr"] == t.params["lr"] and run.seed == t.seed and run.episodes == 15
            assert run.pid == os.getpid()  # the driver wrote the record, not a trial
            assert len(store.run_metrics(t.run_id, ["episode"])["score"]) > 0
            assert len(store.run_metrics(t.run_id, ["evaluation"])["eval_score"]) == 1
            cps = store.run_checkpoints(t.run_id)
            assert cps and all(c.path.is_file() for c in cps)
            assert cps[-1].path.parent.name == f"run-{t.run_id}"
        # the n-tuple learner is deterministic for a seed: the same figures, in the same order
        assert _points(store, sid) == local


def test_a_sweep_stopped_on_ray_resumes_its_trials_from_their_checkpoints(tmp_path, ray_cluster):
    # a budget of seconds: the stop lands while the third and fourth trials train, whatever the speed
    request = tiny(workers=2, backend="ray", budget=Budget(seconds=2.5), checkpoint_every_s=0.3)
    stop = threading.Event()
    with GameStore(tmp_path / "s.sqlite3") as store:
        done = 0
        started: set[int] = set()
        for ev in run_sweep(request, store, stop=stop):
            if ev.kind == "done":
                done += 1
            elif ev.kind == "started" and done >= 2 and ev.trial is not None:
                started.add(ev.trial)
                stop.set()  # the third and fourth trials are under way: stop them
        sid = ev.sweep_id
        assert ev.kind == "finished" and ev.status == "stopped"
        trials = store.sweep_trials(sid)
        # which trials finished first depends on the machine's load: whatever they are, they stay
        finished = {t.trial: t.run_id for t in trials if t.run_status == "finished"}
        assert len(finished) >= 2 and started and len(finished) < 4
        before = {
            t.trial: (t.run_id, store.get_run(t.run_id).steps)
            for t in trials
            if t.run_id is not None and t.trial not in finished
        }
        assert before and all(store.get_run(r).status == "stopped" for r, _ in before.values())
        assert all(store.last_checkpoint(r) is not None for r, _ in before.values())

        events = list(run_sweep(None, store, resume=sid))
        assert events[0].finished_trials == len(finished) and events[-1].status == "finished"
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        assert {t.trial: t.run_id for t in trials if t.trial in finished} == finished
        assert len(store.list_runs()) == 4
        for trial, (run_id, steps_before) in before.items():
            assert trials[trial].run_id == run_id  # the same run went on, from its checkpoint
            run = store.get_run(run_id)
            # moves, not games: on a loaded machine the time left after the stop may end inside a game
            assert run.steps > steps_before
            steps = store.run_metrics(run_id, ["episode"])["step"]
            assert np.all(np.diff(steps) > 0)  # each step once: the history was cut at the checkpoint
            assert len(store.run_metrics(run_id, ["evaluation"])["eval_score"]) == 1
