"""Sweeps survive kills and bad input: a trial killed before its first checkpoint, a grid counted before it is built, a
sweep deleted while it runs, a knob given twice, resume flags over stored ones, Ray that does not
start, and a kill -9 of the driver and all its children at several moments of a sweep's life."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.base import MetricEvent
from engine.store import GameStore
from studio.cli import main
from studio.services import sweep as sweep_service
from studio.services.sweep import (
    MAX_TRIALS,
    SweepError,
    SweepFinished,
    SweepRequest,
    TrialDone,
    plan_trials,
    rank_sweep,
    resumed_request,
    run_sweep,
)
from tests.studio.sweep_helpers import TINY, dead_driver_sweep, tiny

ROOT = Path(__file__).resolve().parents[2]


def _ranking(store: GameStore, sweep_id: int) -> list[tuple]:
    _metric, points = rank_sweep(store, sweep_id)
    return [(p.rank, json.dumps(p.params, sort_keys=True), p.values) for p in points]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


# ---------------------------------------------- 1. a trial killed before its first checkpoint


def test_a_trial_killed_before_its_first_checkpoint_starts_again_and_finishes_once(tmp_path):
    request = tiny()
    with GameStore(tmp_path / "a.sqlite3") as store:
        events = list(run_sweep(request, store))
        whole = _ranking(store, events[0].sweep_id)
    with GameStore(tmp_path / "b.sqlite3") as store:
        sid = store.create_sweep("ntuple", request.spec(), plan_trials(request))
        # as a kill in the trial's first seconds leaves it: a linked run, some metrics, no checkpoint,
        # marked stopped by the store (its process is gone)
        with store.linking_runs_to(sid, 0):
            dead = store.create_run("ntuple", {"lr": 0.1}, request.rules or {}, {"episodes": 15}, seed=1)
        store.log_metrics(dead, [MetricEvent("episode", 1, 40, 0.1, {"score": 300.0}, 0.1)])
        store.set_run_status(dead, "stopped", "interrupted: process 1 ended without closing the run")
        store.set_sweep_status(sid, "stopped")
        events = list(run_sweep(None, store, resume=sid))
        assert events[-1].status == "finished"
        assert not [e for e in events if isinstance(e, TrialDone | SweepFinished) and e.error]
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        runs = store.list_runs()
        assert sorted(r.id for r in runs) == sorted(t.run_id for t in trials)  # no orphan: the dead run went
        assert dead not in {r.id for r in runs}
        # started again on the same seed: the very figures of an uninterrupted sweep, every point on
        # all its seeds
        assert _ranking(store, sid) == whole
        assert all(None not in values for _, _, values in whole)


# --------------------------------------------------------------- 2. counted before it is built


BIG_GRID = [
    f"{k}={','.join(vs)}"
    for k, vs in {
        "lr": [f"{i}e-4" for i in range(1, 11)],
        "gamma": [f"0.{90 + i}" for i in range(10)],
        "batch_size": [str(16 * i) for i in range(1, 11)],
        "replay_capacity": [str(1000 * i) for i in range(1, 11)],
        "learning_starts": [str(10 * i) for i in range(10)],
        "train_every": [str(i) for i in range(1, 11)],
        "envs": [str(i) for i in range(1, 11)],
        "n_step": [str(i) for i in range(1, 11)],
        "reward_scale": [f"{i}.5" for i in range(10)],
        "target_update": [str(100 * i) for i in range(10)],
        "grad_clip": [f"{i}.0" for i in range(1, 11)],
        "eps_start": [f"0.{i}" for i in range(10)],
    }.items()
]


@pytest.fixture
def no_huge_product(monkeypatch):
    """itertools.product in the sweep service, made to refuse building more than a planned sweep may
    hold: a plan that builds its combinations before counting them fails here instead of filling the
    memory."""
    real = itertools.product

    def product(*iterables):
        for k, combo in enumerate(real(*iterables)):
            if k > MAX_TRIALS:
                raise AssertionError("the grid's combinations were built before they were counted")
            yield combo

    monkeypatch.setattr(sweep_service.itertools, "product", product)


def test_a_grid_of_ten_to_the_twelve_points_is_refused_before_one_is_built(no_huge_product):
    grid = {f"k{i}": tuple(range(10)) for i in range(12)}
    with pytest.raises(SweepError, match=r"plans 5,000,000,000,000 trials; at most 1,000"):
        plan_trials(SweepRequest(agent="dqn", budget=TINY, grid=grid, seeds=5))


def test_the_cli_refuses_twelve_knobs_of_ten_values_in_one_line(no_huge_product, tmp_path, capsys):
    data = str(tmp_path / "data")
    code = main(
        [
            "--data-dir",
            data,
            "sweep",
            "--agent",
            "dqn",
            "--episodes",
            "5",
            "--seeds",
            "5",
            "--grid",
            *BIG_GRID,
        ]
    )
    assert code == 2
    assert "5,000,000,000,000 trials" in _one_line(capsys)
    with GameStore.open(data) as store:
        assert store.list_sweeps() == [] and store.list_runs() == []


# ------------------------------------------------------------------ 3. deleted while it runs


def test_a_running_sweep_is_not_deleted_and_a_stopped_one_is(tmp_path, capsys):
    data = tmp_path / "data"
    with GameStore.open(data) as store:
        sid = store.create_sweep("ntuple", tiny().spec(), plan_trials(tiny()))  # driven by this process
        with pytest.raises(ValueError, match=f"sweep {sid} is running in this process: stop it first"):
            store.delete_sweep(sid)
    assert main(["--data-dir", str(data), "sweeps", "delete", str(sid)]) == 2
    assert "stop it first" in _one_line(capsys)
    with GameStore.open(data) as store:
        assert store.get_sweep(sid).status == "running"
        store.set_sweep_status(sid, "stopped")
    assert main(["--data-dir", str(data), "sweeps", "delete", str(sid)]) == 0
    with GameStore.open(data) as store:
        assert store.list_sweeps() == []


def test_sweeps_delete_during_a_run_leaves_the_sweep_whole(tmp_path, capsys):
    data = tmp_path / "data"
    refused = []
    with GameStore.open(data) as store:
        for ev in run_sweep(tiny(), store):
            if ev.kind == "started" and not refused:
                refused.append(main(["--data-dir", str(data), "sweeps", "delete", str(ev.sweep_id)]))
        sid = ev.sweep_id
        assert ev.status == "finished" and refused == [2]
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        assert sorted(r.id for r in store.list_runs()) == sorted(t.run_id for t in trials)


def test_a_sweep_whose_driver_died_may_be_deleted(tmp_path):
    path = tmp_path / "s.sqlite3"
    sid = dead_driver_sweep(path)
    with GameStore(path) as store:
        store.delete_sweep(sid)
        assert store.list_sweeps() == []


# ---------------------------------------------------------------------- 5. a knob given twice


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--grid", "lr=0.1,0.2", "lr=0.3,0.4"], "gives lr twice"),
        (["--grid", "lr=0.1", "lam=0.5", "lr=0.3"], "gives lr twice"),
        (["--point", "lr=0.1 lr=0.2", "--point", ""], "gives lr twice"),
        (["--random", "lr=0.01:1", "lr=0.1:0.5", "--samples", "3"], "gives lr twice"),
        (["--grid", "lr=0.1,0.2", "--random", "lr=0.01:1", "--samples", "3"], "gives lr twice"),
    ],
)
def test_a_knob_given_twice_is_one_line_and_exit_2(tmp_path, capsys, args, words):
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "sweep", "--agent", "ntuple", "--episodes", "5", *args]) == 2
    assert words in _one_line(capsys)
    with GameStore.open(data) as store:
        assert store.list_sweeps() == []


# ------------------------------------------------------------------ 6. resume flags win


def test_resume_flags_win_over_the_stored_ones():
    stored = tiny(backend="ray", ray_address="10.0.0.1:6379", workers=3)
    local = resumed_request(stored, backend="local")
    assert (local.backend, local.ray_address, local.workers) == ("local", None, 3)
    moved = resumed_request(tiny(), ray_address="10.0.0.2:6379", workers=2)
    assert (moved.backend, moved.ray_address, moved.workers) == ("ray", "10.0.0.2:6379", 2)
    same = resumed_request(stored)
    assert (same.backend, same.ray_address) == ("ray", "10.0.0.1:6379")
    with pytest.raises(SweepError, match="leave out --backend local"):
        resumed_request(stored, backend="local", ray_address="10.0.0.3:1")
    with pytest.raises(SweepError, match="empty"):
        resumed_request(stored, ray_address=" ")


def test_resume_with_backend_local_does_not_dial_the_stored_ray_address(tmp_path, capsys):
    pytest.importorskip("ray.tune")
    from studio.services import sweep_ray

    request = tiny(grid={"lr": (0.1,)}, seeds=2, backend="ray", ray_address="127.0.0.1:9")
    data = tmp_path / "data"
    with GameStore.open(data) as store:
        sid = store.create_sweep("ntuple", request.spec(), plan_trials(request))
        store.set_sweep_status(sid, "stopped")

    def no_ray(*a, **kw):
        raise AssertionError("the stored Ray address was dialled")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(sweep_ray, "_init_ray", no_ray)
        assert (
            main(["--data-dir", str(data), "sweep", "--resume", str(sid), "--backend", "local", "--json"])
            == 0
        )
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "finished" and all(p["statuses"] == ["finished"] * 2 for p in out["points"])


# ------------------------------------------------------------------ 7. Ray that does not start


def test_ray_that_does_not_start_is_one_line_and_the_sweep_resumes_locally(tmp_path, capsys, monkeypatch):
    pytest.importorskip("ray.tune")
    import ray

    def timed_out(*a, **kw):
        raise RuntimeError(
            "Failed to start the raylet.\nThe current node timed out during startup. This could happen "
            "because some of the Ray processes failed to startup."
        )

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", timed_out)
    data = str(tmp_path / "data")
    args = ["--data-dir", data, "sweep", "--agent", "ntuple", "--grid", "lr=0.1", "--seeds", "2"]
    assert main([*args, "--episodes", "10", "--eval-games", "2", "--backend", "ray"]) == 2
    # the progress line (which a terminal overwrites in place), then the error in one line
    (err,) = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert err.startswith("python main.py sweep: error: ")
    assert "Ray did not start" in err and "timed out during startup" in err and "ray stop" in err
    with GameStore.open(data) as store:
        (info,) = store.list_sweeps()
        assert info.status == "stopped" and store.list_runs() == []
    monkeypatch.undo()
    assert main(["--data-dir", data, "sweep", "--resume", str(info.id), "--backend", "local"]) == 0
    with GameStore.open(data) as store:
        assert [t.run_status for t in store.sweep_trials(info.id)] == ["finished"] * 2


# ------------------------------------------------- kill -9 of the driver and its children


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (trial children run in sessions of their own: killpg misses them)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids = [int(x) for x in fh.read().split()]
        except OSError:
            continue
        for kid in kids:
            out += [kid, *_children(kid)]
    return out


def _kill_all(proc: subprocess.Popen) -> None:
    """kill -9 of the driver and every process under it, at one moment: the driver is frozen first so
    that it starts nothing between the look and the kill."""
    from engine.store.db import _pid_alive

    os.kill(proc.pid, signal.SIGSTOP)
    pids = [*_children(proc.pid), proc.pid]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while any(_pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _moment(store: GameStore, name: str) -> bool:
    """Whether the sweep in ``store`` is at moment ``name`` of its life."""
    sweeps = store.list_sweeps()
    if not sweeps:
        return False
    trials = store.sweep_trials(sweeps[0].id)
    runs = [t for t in trials if t.run_id is not None]
    if name == "planned":
        return True
    if name == "training":  # a trial's run exists, before its first checkpoint
        return any(t.run_status == "running" and not store.run_checkpoints(t.run_id) for t in runs)
    if name == "checkpointed":  # a trial's run saved a checkpoint and trains on
        return any(t.run_status == "running" and store.run_checkpoints(t.run_id) for t in runs)
    if name == "one-done":  # a trial finished, another did not
        return any(t.run_status == "finished" for t in runs) and any(
            t.run_status != "finished" for t in trials
        )
    raise ValueError(name)


#: Two points far apart (lr 1 learns, lr 0.0001 hardly moves: about 12,000 against 3,000 after 300,000
#: moves) on one seed each: the ranking is the learner's whatever moment the kill hits (a trial resumed
#: from a checkpoint taken mid-game does not replay that game's moves exactly).
KILL_SWEEP = ["--agent", "ntuple", "--grid", "lr=0.0001,1.0", "--seeds", "1", "--steps", "300000",
              "--eval-games", "2", "--workers", "2"]  # fmt: skip


def _killed_then_resumed(tmp_path: Path, moment: str | float, extra: list[str]) -> list[tuple]:
    data = tmp_path / f"data-{moment}"
    cmd = [sys.executable, "main.py", "--data-dir", str(data), "sweep", *KILL_SWEEP, *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        if isinstance(moment, float):
            time.sleep(moment)
        else:
            while time.monotonic() < deadline and proc.poll() is None:
                if data.exists() and (data / "studio.sqlite3").exists():
                    with GameStore.open(data) as store:
                        if _moment(store, moment):
                            break
                time.sleep(0.05)
            else:
                pytest.fail(f"the sweep never reached the moment {moment!r}")
    finally:
        if proc.poll() is None:
            _kill_all(proc)
    with GameStore.open(data) as store:
        sweeps = store.list_sweeps()
        if not sweeps:  # killed before the sweep was recorded: nothing to resume, nothing left behind
            assert store.list_runs() == []
            return []
        sid = sweeps[0].id
        events = list(run_sweep(None, store, resume=sid))
        assert events[-1].status == "finished", events[-1]
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * len(trials)  # every trial finished
        runs = store.list_runs()
        assert sorted(r.id for r in runs) == sorted(t.run_id for t in trials)  # once, and no orphan run
        assert all(r.status == "finished" for r in runs)
        return [(p.rank, json.dumps(p.params)) for p in rank_sweep(store, sid)[1]]


def run_uninterrupted(data: Path) -> list[tuple]:
    """The ranking of :data:`KILL_SWEEP` run to its end without a kill."""
    cmd = [sys.executable, "main.py", "--data-dir", str(data), "sweep", *KILL_SWEEP, "--json"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(out.stdout)
    assert result["status"] == "finished"
    return [(p["rank"], json.dumps(p["params"])) for p in result["points"]]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[tuple]:
    return run_uninterrupted(tmp_path_factory.mktemp("whole"))


@pytest.mark.parametrize(
    ("moment", "extra"),
    [
        ("planned", []),
        ("training", []),  # checkpoints every 300 s: any kill in a trial's first minutes
        ("checkpointed", ["--checkpoint-every", "0.2"]),
        # one trial after the other: two side by side may end within one poll of each other, and the
        # moment between them is missed
        ("one-done", ["--workers", "1"]),
    ],
)
def test_a_kill_of_the_driver_and_its_children_then_resume_ranks_as_an_uninterrupted_sweep(
    tmp_path, uninterrupted, moment, extra
):
    assert [rank for rank, _ in uninterrupted] == [1, 2]
    assert _killed_then_resumed(tmp_path, moment, extra) == uninterrupted


@pytest.mark.slow
@pytest.mark.parametrize("after_s", [0.5, 1.5, 3.0, 4.5, 6.0, 8.0, 11.0, 15.0])
def test_a_kill_at_any_second_then_resume_ranks_as_an_uninterrupted_sweep(tmp_path, uninterrupted, after_s):
    ranking = _killed_then_resumed(tmp_path, after_s, ["--checkpoint-every", "0.5"])
    assert ranking in ([], uninterrupted)
