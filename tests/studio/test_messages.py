"""Typed messages of a training child and a sweep's trials, and the Qt-free session logic that reads
them (sweep progress, how a run ended): hand-written messages with known answers, no processes."""

from __future__ import annotations

import io
import logging
import pickle
import threading

import pytest

from agents.base import Budget, MetricEvent
from engine import Game, Rules
from engine.records import GameTrace
from engine.store import GameStore
from studio.services import messages as m
from studio.services import sweep as sweep_service
from studio.services.runs import RunEnd, RunRequest, mark_failed, run_end
from studio.services.sweep import (
    SweepEvent,
    SweepFinished,
    SweepPlanned,
    SweepProgress,
    SweepRequest,
    TrialDone,
    TrialProgress,
    TrialStarted,
    run_sweep,
)
from studio.services.sweep_ray import RunSink
from studio.services.training_process import read_frame, write_frame


def _event(episode: int, progress: float = 0.0, score: float = 100.0) -> MetricEvent:
    return MetricEvent("episode", episode, 10 * episode, 0.5 * episode, {"score": score}, progress)


EVERY_MESSAGE = [
    m.Opening(RunRequest(agent="ntuple", seed=3), "/data/s.sqlite3", 12.5),
    m.Started(7, "ntuple"),
    m.Events([_event(1), _event(2, 0.5)]),
    m.CheckpointSaved("/data/checkpoints/run-7/c.pt"),
    m.Done("finished", "/data/checkpoints/run-7/c.pt", 3),
    m.Failed("boom", "lr", "Traceback ..."),
    m.Detached(),
    m.MetricsOp([_event(3)]),
    m.CheckpointOp(4, "c.pt", b"\x00\x01bytes", 5, 50, True),
    m.EvalOp(4, 1234.5),
    m.PruneOp(2, (4, 1)),
    m.StatusOp("stopped", None),
    m.TruncateOp(40),
    m.TrialBegan(),
    m.TrialEnded("finished"),
    m.TrialReport(3, b"ops"),
    m.TrialGone(3, True, "the worker died"),
    m.TuneEnded(None),
]


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda x: type(x).__name__)
def test_every_message_crosses_a_pipe_unchanged(message):
    pipe = io.BytesIO()
    write_frame(pipe, message)
    pipe.seek(0)
    back = read_frame(pipe)
    assert type(back) is type(message) and back == message
    assert read_frame(pipe) is None  # the end of the stream


def test_a_game_trace_op_carries_the_game():
    game = Game(seed=5)
    trace = GameTrace.start(game)
    back = pickle.loads(pickle.dumps(m.TraceOp(trace, "training", "ntuple")))
    assert (back.source, back.agent, back.trace.seed) == ("training", "ntuple", 5)
    assert (back.trace.initial_board == trace.initial_board).all()


def test_messages_are_frozen_and_say_which_ends_a_run():
    with pytest.raises(AttributeError):
        m.Done("finished").status = "failed"  # type: ignore[misc]
    ends = [x for x in EVERY_MESSAGE[1:7] if m.is_last_word(x)]  # the child's messages
    assert [type(x) for x in ends] == [m.Done, m.Failed]


def test_a_failure_says_a_run_error_in_one_line_and_a_bug_with_its_traceback():
    from agents.runner import Diverged

    try:
        raise Diverged("the loss is nan at step 12", "lr")
    except Diverged as e:
        assert m.Failed.of(e) == m.Failed("the loss is nan at step 12", "lr", "")
    try:
        {}["board"]
    except KeyError as e:
        bug = m.Failed.of(e)
    assert (bug.message, bug.field) == ("KeyError: 'board'", None)
    assert bug.traceback.startswith("Traceback") and '{}["board"]' in bug.traceback


# ------------------------------------------------------------------------------- sweep progress


def _ev(kind: str, trial: int | None = None, finished: int = 1, **kw) -> SweepEvent:
    """The sweep event of class ``kind`` for trial ``trial`` (its run 100 + trial) of sweep 9, 4 trials."""
    if trial is None:
        return SweepPlanned(9, 4, finished)
    cls = {"started": TrialStarted, "progress": TrialProgress, "done": TrialDone}[kind]
    return cls(9, 4, finished, trial, 100 + trial, **kw)


def test_sweep_progress_counts_running_trials_by_their_own_progress():
    p = SweepProgress()
    steps = [
        (_ev("planned"), 1 / 4, "1/4 trials done, 0 running", "starting"),
        (_ev("started", 1), 1 / 4, "1/4 trials done, 1 running", "running"),
        (
            _ev("progress", 1, events=(_event(1, 0.2), _event(2, 0.5))),
            1.5 / 4,
            "1/4 trials done, 1 running",
            "running",
        ),
        (_ev("started", 2), 1.5 / 4, "1/4 trials done, 2 running", "running"),
        (_ev("progress", 2, events=(_event(1, 0.25),)), 1.75 / 4, "1/4 trials done, 2 running", "running"),
        (_ev("progress", 2), 1.75 / 4, "1/4 trials done, 2 running", "running"),  # no events: as it was
        (_ev("done", 1, finished=2, status="finished"), 2.25 / 4, "2/4 trials done, 1 running", "running"),
    ]
    for ev, fraction, text, status in steps:
        p.update(ev)
        assert p.fraction == pytest.approx(fraction), ev
        assert (p.text(), p.status, p.sweep_id, p.total) == (text, status, 9, 4)
    assert p.running == {2: 0.25}
    p.stopping()
    assert p.status == "stopping" and p.final_status == "failed"  # not ended yet
    p.update(_ev("done", 2, finished=3, status="stopped"))
    p.update(SweepFinished(9, 4, 3, status="stopped"))
    assert (p.status, p.final_status, p.running, p.fraction) == ("stopped", "stopped", {}, 0.75)


def test_a_failed_trial_reads_as_one_line():
    assert _ev("done", 2, status="failed", error="boom").failure == "trial 2 (run 102) failed: boom"
    assert _ev("done", 2, status="finished").failure is None
    assert _ev("started", 2).failure is None  # only a trial that ended can have failed


def test_run_sweep_turns_a_backends_messages_into_sweep_events(tmp_path, monkeypatch):
    """What any backend says (here a hand-written one) becomes the sweep's events, in order."""
    said: list[tuple[int, m.ChildMessage]] = [
        (0, m.Started(11, "ntuple")),
        (1, m.Started(12, "ntuple")),
        (0, m.Events([_event(1, 0.5)])),
        (0, m.CheckpointSaved("/x/c.pt")),  # nothing for the sweep: the ranking reads the store
        (0, m.Done("finished", "/x/c.pt", 0)),
        (1, m.Done("stopped", None, 0)),  # stopped: not done, it resumes
        (2, m.Failed("the trial's process ended (killed by SIGKILL)")),
    ]

    def backend(jobs, store, workers, stop):
        assert [t for t, _ in jobs] == [0, 1, 2, 3] and workers == 1
        yield from said

    monkeypatch.setattr(sweep_service, "_backend", lambda name: backend)
    request = SweepRequest(agent="ntuple", grid={"lr": (0.1, 0.2)}, seeds=2, budget=Budget(episodes=1))
    with GameStore(tmp_path / "s.sqlite3") as store:
        events = list(run_sweep(request, store, stop=threading.Event()))
        # each event class carries only its own fields: absent ones read None here (events: 0)
        got = [
            (
                e.kind,
                getattr(e, "trial", None),
                getattr(e, "run_id", None),
                getattr(e, "status", None),
                getattr(e, "error", None),
                len(getattr(e, "events", ())),
                e.finished_trials,
            )
            for e in events
        ]
        assert [type(e).__name__ for e in events] == [
            "SweepPlanned",
            "TrialStarted",
            "TrialStarted",
            "TrialProgress",
            "TrialDone",
            "TrialDone",
            "TrialDone",
            "SweepFinished",
        ]
        assert got == [
            ("planned", None, None, None, None, 0, 0),
            ("started", 0, 11, None, None, 0, 0),
            ("started", 1, 12, None, None, 0, 0),
            ("progress", 0, 11, None, None, 1, 0),
            ("done", 0, 11, "finished", None, 0, 1),
            ("done", 1, 12, "stopped", None, 0, 1),
            ("done", 2, None, "failed", "the trial's process ended (killed by SIGKILL)", 0, 2),
            ("finished", None, None, "stopped", None, 0, 2),  # no run of the store finished: it resumes
        ]
        assert all(e.total == 4 and e.sweep_id == events[0].sweep_id for e in events)
        assert store.get_sweep(events[0].sweep_id).status == "stopped"


# --------------------------------------------------------------------------------- a run's end


@pytest.mark.parametrize(
    ("status", "failed", "checkpoint", "want"),
    [
        (
            "finished",
            False,
            "/d/checkpoints/run-1/c-final.pt",
            ("finished", "Finished · checkpoint c-final.pt", True),
        ),
        ("finished", False, None, ("finished", "Finished", False)),
        ("stopped", False, "/d/c.pt", ("stopped", "Stopped · checkpoint c.pt", False)),
        ("detached", False, None, ("detached", "Training on without the window", False)),
        ("running", False, "/d/c.pt", ("stopped", "Stopped · checkpoint c.pt", False)),  # went away quietly
        ("starting", False, None, ("stopped", "Stopped", False)),
        ("running", True, "/d/c.pt", ("failed", "Failed", False)),  # its process died
        ("failed", True, "/d/c.pt", ("failed", "Failed", False)),
        ("finished", True, "/d/c.pt", ("failed", "Failed", False)),  # an error wins over the last word
    ],
)
def test_a_runs_end_maps_its_last_word_to_a_final_state(status, failed, checkpoint, want):
    end = run_end(status, failed, checkpoint)
    assert isinstance(end, RunEnd)
    assert (end.status, end.text, end.complete) == want


def test_a_failed_run_is_marked_failed_unless_it_already_ended(tmp_path, caplog):
    with GameStore(tmp_path / "s.sqlite3") as store:
        ids = [store.create_run("ntuple", {}, Rules(), {"episodes": 1}) for _ in range(3)]
        store.set_run_status(ids[1], "paused")
        store.set_run_status(ids[2], "finished")
        for rid in ids:
            mark_failed(store, rid, "the training process died (killed by SIGKILL)")
        runs = [store.get_run(rid) for rid in ids]
        assert [r.status for r in runs] == ["failed", "failed", "finished"]
        assert runs[0].error == "the training process died (killed by SIGKILL)" and runs[2].error is None
        with caplog.at_level(logging.ERROR, logger="studio.services.runs"):
            mark_failed(store, 999, "gone")  # no such run: logged, never raised
        assert "cannot mark run 999 failed" in caplog.text


# ------------------------------------------------------------------------- the Ray driver's sink


def test_a_sink_applies_ops_in_order_and_batches_metric_events(tmp_path):
    with GameStore(tmp_path / "s.sqlite3") as store:
        run_id = store.create_run("ntuple", {}, Rules(), {"episodes": 3})
        sink = RunSink(store, run_id)
        ops = [
            m.TrialBegan(),
            m.MetricsOp([_event(1)]),
            m.MetricsOp([_event(2)]),
            m.CheckpointOp(1, "c1.pt", b"first", 2, 20, False),
            m.EvalOp(1, 500.0),
            m.MetricsOp([_event(3)]),
            m.CheckpointOp(2, "c2.pt", b"second", 3, 30, True),
            m.PruneOp(1, ()),
            m.StatusOp("finished", None),
        ]
        out = sink.apply(ops)
        folder = sink.checkpoint_dir()
        assert out == [
            m.Events([_event(1), _event(2)]),
            m.CheckpointSaved(str(folder / "c1.pt")),
            m.Events([_event(3)]),
            m.CheckpointSaved(str(folder / "c2.pt")),
        ]
        assert list(store.run_metrics(run_id)["episode"]) == [1, 2, 3]
        cps = store.run_checkpoints(run_id)
        # c1 had the best evaluation, so pruning to one kept it as well as the newest
        assert [(c.path.name, c.eval_score, c.final) for c in cps] == [
            ("c1.pt", 500.0, False),
            ("c2.pt", None, True),
        ]
        assert (folder / "c2.pt").read_bytes() == b"second"
        assert store.get_run(run_id).status == "finished"
        assert sink.done("finished") == m.Done("finished", str(folder / "c2.pt"), 0)
