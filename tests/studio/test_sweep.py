"""Sweeps: parsing, planning, the store's sweep records, local trials, ranking, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.base import Budget
from agents.registry import get_agent_class
from engine.core import Rules
from engine.store import GameStore
from engine.store.schema import SCHEMA_VERSION
from studio.cli import main
from studio.services.runs import RunError, RunRequest
from studio.services.sweep import (
    MAX_TRIALS,
    KnobRange,
    PointResult,
    SweepError,
    SweepRequest,
    metric_value,
    parse_grid,
    parse_range,
    plan_trials,
    rank_sweep,
    run_sweep,
    sweep_request_from_spec,
)
from tests.studio.sweep_helpers import TINY, dead_driver_sweep, tiny

ROOT = Path(__file__).resolve().parents[2]
NTUPLE = get_agent_class("ntuple").config_cls
DQN = get_agent_class("dqn").config_cls


# ------------------------------------------------------------------------------------ parsing


def test_a_grid_knob_is_read_as_its_type_and_duplicates_go():
    assert parse_grid("lr=1e-4,5e-4,1e-4", DQN) == ("lr", (1e-4, 5e-4))
    assert parse_grid("batch-size=32,64", DQN) == ("batch_size", (32, 64))
    assert parse_grid("double=true,false", DQN) == ("double", (True, False))
    assert parse_grid("loss=mse,huber", DQN) == ("loss", ("mse", "huber"))
    assert parse_grid("hidden=256,256;512", DQN) == ("hidden", ((256, 256), (512,)))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("lr", "NAME=V1,V2"),
        ("nope=1,2", "not a setting"),
        ("lr=abc", "cannot read"),
        ("lr=5", "must be in"),
        ("lr=1e-4,,1e-3", "empty value"),
        ("loss=l1", "must be one of"),
    ],
)
def test_a_bad_grid_knob_says_what_is_wrong(text, words):
    with pytest.raises(SweepError, match=words):
        parse_grid(text, DQN)


def test_a_range_is_numeric_ordered_and_positive_when_log():
    assert parse_range("lr=1e-5:1e-2:log", DQN) == KnobRange("lr", 1e-5, 1e-2, True)
    assert parse_range("gamma=0.9:0.999", DQN) == KnobRange("gamma", 0.9, 0.999, False)
    for text, words in [
        ("loss=0:1", "not a number"),
        ("gamma=0.9:0.5", "low < high"),
        ("grad_clip=0:10:log", "low > 0"),
        ("gamma=0.9", "NAME=LOW:HIGH"),
        ("gamma=0.1:0.9:cubic", "log or lin"),
    ]:
        with pytest.raises(SweepError, match=words):
            parse_range(text, DQN)


# ----------------------------------------------------------------------------------- planning


def test_a_grid_plans_every_combination_times_the_seeds_in_order():
    req = SweepRequest(
        agent="dqn", budget=TINY, grid={"lr": (1e-4, 1e-3), "gamma": (0.9, 0.99)}, seeds=2, seed=7
    )
    trials = plan_trials(req)
    assert trials == [
        ({"lr": 1e-4, "gamma": 0.9}, 7),
        ({"lr": 1e-4, "gamma": 0.9}, 8),
        ({"lr": 1e-4, "gamma": 0.99}, 7),
        ({"lr": 1e-4, "gamma": 0.99}, 8),
        ({"lr": 1e-3, "gamma": 0.9}, 7),
        ({"lr": 1e-3, "gamma": 0.9}, 8),
        ({"lr": 1e-3, "gamma": 0.99}, 7),
        ({"lr": 1e-3, "gamma": 0.99}, 8),
    ]


def test_a_random_search_draws_the_same_points_from_the_same_seed_inside_its_ranges():
    req = SweepRequest(
        agent="dqn",
        budget=TINY,
        ranges=(KnobRange("lr", 1e-5, 1e-2, True), KnobRange("batch_size", 16, 256)),
        grid={"loss": ("mse", "huber")},
        samples=40,
        seed=3,
    )
    a, b = plan_trials(req), plan_trials(req)
    assert a == b and len(a) == 40
    assert plan_trials(SweepRequest(**{**req.__dict__, "seed": 4})) != a
    lrs = [p["lr"] for p, _ in a]
    assert all(1e-5 <= x <= 1e-2 for x in lrs)
    # log-uniform: about a third of the draws in each decade
    decades = [sum(10.0**k <= x < 10.0 ** (k + 1) for x in lrs) for k in (-5, -4, -3)]
    assert min(decades) >= 5
    assert all(isinstance(p["batch_size"], int) and 16 <= p["batch_size"] <= 256 for p, _ in a)
    assert {p["loss"] for p, _ in a} == {"mse", "huber"}


def test_plans_that_cannot_run_are_refused_before_anything_is_stored(tmp_path):
    with pytest.raises(SweepError, match="knobs to vary"):
        plan_trials(SweepRequest(agent="dqn", budget=TINY))
    with pytest.raises(SweepError, match="budget"):
        plan_trials(SweepRequest(agent="dqn", grid={"lr": (0.1,)}))
    with pytest.raises(SweepError, match="does not learn"):
        plan_trials(SweepRequest(agent="greedy", budget=TINY, grid={"lr": (0.1,)}))
    big = {"lr": tuple(1e-4 * (i + 1) for i in range(40)), "gamma": tuple(0.5 + i / 100 for i in range(30))}
    with pytest.raises(SweepError, match=f"at most {MAX_TRIALS:,}"):
        plan_trials(SweepRequest(agent="dqn", budget=TINY, grid=big))
    with pytest.raises(SweepError, match="reports no metric"):
        plan_trials(SweepRequest(agent="dqn", budget=TINY, grid={"lr": (0.1,)}, metric="nonsense"))
    with GameStore(tmp_path / "s.sqlite3") as store:
        with pytest.raises(SweepError):
            list(run_sweep(SweepRequest(agent="dqn", budget=TINY), store))
        assert store.list_sweeps() == [] and store.list_runs() == []


@pytest.mark.parametrize(
    ("settings", "field", "words"),
    [
        ({"workers": 0}, "workers", "workers must be >= 1, got 0"),
        ({"backend": "cloud"}, "backend", "backend must be one of local, ray, got 'cloud'"),
        ({"ray_address": "10.0.0.5:6379"}, "backend", "Ray"),
    ],
)
def test_a_sweeps_parallel_settings_are_checked_as_a_runs(monkeypatch, settings, field, words):
    # one check (studio.services.runs.check_parallel) for a run's and a sweep's; a sweep's is a SweepError
    from studio.services import runs

    monkeypatch.setattr(runs, "have_ray", lambda: False)  # an address without Ray installed
    request = SweepRequest(agent="dqn", budget=TINY, grid={"lr": (0.1,)}, **settings)
    with pytest.raises(SweepError, match=words) as err:
        plan_trials(request)
    assert err.value.field == field
    run = RunRequest(agent="dqn", budget=TINY, **settings)
    with pytest.raises(RunError, match=words) as run_err:
        run.check()
    assert (str(run_err.value), run_err.value.field) == (str(err.value), field)


def test_the_spec_round_trips_through_json():
    req = SweepRequest(
        agent="dqn",
        config={"hidden": (64,)},
        rules=Rules(rows=3, cols=3),
        budget=Budget(episodes=5, seconds=60.0),
        grid={"lr": (1e-4, 1e-3)},
        ranges=(KnobRange("gamma", 0.9, 0.99),),
        samples=3,
        seeds=2,
        seed=5,
        metric="score",
        workers=2,
        eval_games=0,
    )
    back = sweep_request_from_spec(json.loads(json.dumps(req.spec())))
    assert json.dumps(back.spec()) == json.dumps(req.spec())  # tuples come back as JSON lists
    assert plan_trials(back) == plan_trials(req)


# --------------------------------------------------------------------------------------- store


def test_the_store_keeps_a_sweeps_trials_and_links_their_runs(tmp_path):
    with GameStore(tmp_path / "s.sqlite3") as store:
        sid = store.create_sweep("ntuple", {"seeds": 1}, [({"lr": 0.1}, 1), ({"lr": 0.2}, 2)])
        rid = store.create_run("ntuple", {}, Rules(), {"episodes": 1}, seed=2)
        store.link_trial(sid, 1, rid)
        trials = store.sweep_trials(sid)
        assert [(t.trial, t.params, t.seed, t.run_id, t.run_status) for t in trials] == [
            (0, {"lr": 0.1}, 1, None, None),
            (1, {"lr": 0.2}, 2, rid, "running"),
        ]
        assert store.sweep_of_runs() == {rid: (sid, 1)}
        info = store.get_sweep(sid)
        assert (info.agent, info.status, info.n_trials, info.n_finished) == ("ntuple", "running", 2, 0)
        store.set_run_status(rid, "finished")
        assert store.get_sweep(sid).n_finished == 1
        store.delete_run(rid)  # the trial loses its run and would run again
        assert store.sweep_trials(sid)[1].run_id is None
        # a running sweep is not deleted (test_sweeps_survive_kills_and_bad_input)
        store.set_sweep_status(sid, "stopped")
        store.delete_sweep(sid)
        assert store.list_sweeps() == []


def test_a_schema_4_store_migrates_to_sweeps_in_place(tmp_path):
    path = tmp_path / "v4.sqlite3"
    with GameStore(path) as s:
        rid = s.create_run("ntuple", {}, Rules(), {"episodes": 1})
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TABLE sweep_trials")
    con.execute("DROP TABLE sweeps")
    con.execute("PRAGMA user_version = 4")
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.close()
    with GameStore(path) as store:
        assert store.list_sweeps() == [] and store.get_run(rid).agent == "ntuple"
        sid = store.create_sweep("ntuple", {}, [({"lr": 0.1}, 1)])
        store.link_trial(sid, 0, rid)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()


def test_a_sweep_whose_driver_died_reads_as_stopped(tmp_path):
    path = tmp_path / "s.sqlite3"
    sid = dead_driver_sweep(path)
    with GameStore(path) as store:
        info = store.get_sweep(sid)
        assert info.status == "stopped" and "interrupted" in (info.error or "")


# ------------------------------------------------------------------------------- running locally


def _values(store, sweep_id):
    metric, points = rank_sweep(store, sweep_id)
    return metric, [(p.rank, p.params, p.values) for p in points]


def test_a_four_trial_grid_runs_on_local_processes_and_ranks_its_points(tmp_path):
    with GameStore(tmp_path / "s.sqlite3") as store:
        events = list(run_sweep(tiny(workers=2), store))
        sid = events[0].sweep_id
        kinds = [e.kind for e in events]
        assert kinds[0] == "planned" and kinds[-1] == "finished" and events[-1].status == "finished"
        assert kinds.count("started") == 4 and kinds.count("done") == 4
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        assert sorted(store.sweep_of_runs()) == sorted(t.run_id for t in trials)
        for t in trials:
            run = store.get_run(t.run_id)
            assert run.config["lr"] == t.params["lr"] and run.seed == t.seed and run.episodes == 15
            evals = store.run_metrics(t.run_id, ["evaluation"])
            assert len(evals["eval_score"]) == 1  # the trial ends with its own evaluation
            assert metric_value(store, t.run_id, "eval_score") == evals["eval_score"][-1]
        metric, points = rank_sweep(store, sid)
        assert metric == "eval_score"
        assert [p.rank for p in points] == [1, 2]
        best, second = points
        assert best.mean >= second.mean
        assert best.mean == pytest.approx(sum(best.values) / 2)
        assert store.get_sweep(sid).status == "finished"
        # the same seeds and knobs train the same agents: the ranking is the learner's, not chance's
        again = list(run_sweep(tiny(workers=1), store))
        assert _values(store, again[0].sweep_id)[1] == _values(store, sid)[1]


def test_a_sweep_stopped_after_two_trials_resumes_to_four(tmp_path):
    stop = threading.Event()
    with GameStore(tmp_path / "s.sqlite3") as store:
        done = 0
        for ev in run_sweep(tiny(workers=1), store, stop=stop):
            if ev.kind == "done":
                done += 1
                if done == 2:
                    stop.set()
        sid = ev.sweep_id
        assert ev.kind == "finished" and ev.status == "stopped"
        statuses = [t.run_status for t in store.sweep_trials(sid)]
        assert statuses[:2] == ["finished", "finished"] and "finished" not in statuses[2:]
        first_runs = [t.run_id for t in store.sweep_trials(sid)[:2]]
        events = list(run_sweep(None, store, resume=sid))
        assert events[0].finished_trials == 2 and events[-1].status == "finished"
        trials = store.sweep_trials(sid)
        assert [t.run_status for t in trials] == ["finished"] * 4
        assert [t.run_id for t in trials[:2]] == first_runs  # finished trials stay as they were
        assert len(store.list_runs()) == 4


def test_a_killed_sweep_driver_resumes_unfinished_trials_from_their_checkpoints(tmp_path):
    data = tmp_path / "data"
    cmd = [
        sys.executable, "main.py", "--data-dir", str(data), "sweep", "--agent", "ntuple",
        "--grid", "lr=0.1,0.01", "--seeds", "2", "--episodes", "100000", "--eval-games", "2",
        "--checkpoint-every", "0.5", "--workers", "2",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.5)
            with GameStore.open(data) as store:
                runs = store.list_runs()
                if len(runs) == 2 and all(store.last_checkpoint(r.id) for r in runs):
                    break
        else:
            pytest.fail("the sweep's trials never saved a checkpoint")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(2)  # the orphaned trials see their driver go, stop and save
    with GameStore.open(data) as store:
        sid = store.list_sweeps()[0].id
        assert store.get_sweep(sid).status == "stopped"
        before = {
            t.trial: (t.run_id, store.get_run(t.run_id).episodes) for t in store.sweep_trials(sid) if t.run_id
        }
        assert len(before) == 2 and all(ep > 0 for _, ep in before.values())
        # resume with a smaller budget left? no: the stored budget; stop it as soon as every trial resumed
        stop = threading.Event()
        seen: set[int] = set()
        for ev in run_sweep(None, store, resume=sid, stop=stop):
            if ev.kind == "started" and ev.trial is not None:
                seen.add(ev.trial)
                if len(seen) == 2:
                    stop.set()
        for trial, (run_id, episodes) in before.items():
            t = store.sweep_trials(sid)[trial]
            assert t.run_id == run_id  # the same run went on, from its checkpoint
            assert store.get_run(run_id).episodes >= episodes


def _sweep_json(capsys: pytest.CaptureFixture[str], data: str, *flags: str) -> dict[str, Any]:
    """``main.py sweep --agent ntuple FLAGS`` into ``data``, two evaluation games a trial on two workers:
    it must succeed; its ``--json`` output read back."""
    argv = ["--data-dir", data, "sweep", "--agent", "ntuple", *flags, "--eval-games", "2", "--workers", "2"]
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_runs_lists_and_shows_a_sweep_as_the_service_ranks_it(tmp_path, capsys):
    data = str(tmp_path / "data")
    out = _sweep_json(capsys, data, "--grid", "lr=0.1,0.01", "--seeds", "1", "--episodes", "10")
    with GameStore.open(data) as store:
        metric, points = rank_sweep(store, out["sweep"])
    assert out["metric"] == metric and out["status"] == "finished"
    assert out["points"] == [p.to_dict() for p in points]
    assert out["best"] == points[0].to_dict()
    assert main(["--data-dir", data, "sweeps", "show", str(out["sweep"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["points"] == out["points"]
    assert main(["--data-dir", data, "sweeps", "list"]) == 0
    listed = capsys.readouterr().out
    assert "ntuple" in listed and "2/2" in listed and "eval_score" in listed
    assert main(["--data-dir", data, "runs", "list"]) == 0
    runs = capsys.readouterr().out
    assert f"{out['sweep']}#0" in runs and f"{out['sweep']}#1" in runs


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--agent", "ntuple", "--episodes", "5"], "knobs to vary"),
        (
            ["--agent", "ntuple", "--grid", "lr=0.1", "--samples", "3", "--episodes", "5"],
            "--samples goes with",
        ),
        (["--agent", "ntuple", "--random", "lr=0.01:1:log", "--episodes", "5"], "needs --samples"),
        (["--agent", "ntuple", "--grid", "nope=1", "--episodes", "5"], "not a setting"),
        (["--resume", "1", "--agent", "ntuple"], "give only --resume"),
        (["--resume", "99"], "no sweep 99"),
    ],
)
def test_bad_sweep_commands_get_one_line_and_store_nothing(tmp_path, capsys, args, words):
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "sweep", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
    with GameStore.open(data) as store:
        assert store.list_runs() == []


def test_a_point_reads_its_mean_and_spread():
    p = PointResult({"lr": 0.1}, (0, 1, 2), (1, 2, None), ("finished", "finished", None), (10.0, 20.0, None))
    assert p.mean == 15.0 and p.std == pytest.approx(7.0710678) and not p.done
    assert p.to_dict()["values"] == [10.0, 20.0, None]


def test_a_trial_stopped_in_its_closing_evaluation_resumes_to_that_evaluation(tmp_path):
    with GameStore(tmp_path / "s.sqlite3") as store:
        events = list(run_sweep(tiny(grid={"lr": (0.1,)}, seeds=1), store))
        sid = events[0].sweep_id
        (trial,) = store.sweep_trials(sid)
        before = store.get_run(trial.run_id)
        # as a stop during the closing evaluation leaves it: budget used up, status stopped
        store.set_run_status(trial.run_id, "stopped")
        events = list(run_sweep(None, store, resume=sid))
        assert events[-1].status == "finished"
        after = store.get_run(trial.run_id)
        assert after.status == "finished" and after.steps == before.steps + 1
        assert len(store.run_metrics(trial.run_id, ["evaluation"])["eval_score"]) == 2


def test_explicit_points_make_an_ab_comparison_of_the_base_and_a_variant(tmp_path, capsys):
    assert plan_trials(
        SweepRequest(agent="ntuple", budget=TINY, points=({}, {"lr": 0.01, "tc": False}), seeds=2)
    ) == [
        ({}, 1),
        ({}, 2),
        ({"lr": 0.01, "tc": False}, 1),
        ({"lr": 0.01, "tc": False}, 2),
    ]
    with pytest.raises(SweepError, match="at least two"):
        plan_trials(SweepRequest(agent="ntuple", budget=TINY, points=({},)))
    # one setting over several seeds: its spread
    assert plan_trials(SweepRequest(agent="ntuple", budget=TINY, points=({},), seeds=3)) == [
        ({}, 1),
        ({}, 2),
        ({}, 3),
    ]
    with pytest.raises(SweepError, match="not both"):
        plan_trials(SweepRequest(agent="ntuple", budget=TINY, points=({}, {}), grid={"lr": (0.1,)}))
    data = str(tmp_path / "data")
    out = _sweep_json(capsys, data, "--point", "", "--point", "lr=0.01 tc=false", "--steps", "3000")
    assert sorted(json.dumps(p["params"]) for p in out["points"]) == ['{"lr": 0.01, "tc": false}', "{}"]
    with GameStore.open(data) as store:
        runs = {r.config["tc"]: r for r in store.list_runs()}
    assert runs[True].config["lr"] != 0.01 and runs[False].config["lr"] == 0.01
    assert runs[True].steps >= 3000 and runs[False].steps >= 3000  # the same number of moves each
    assert main(["--data-dir", data, "sweeps", "show", str(out["sweep"])]) == 0
    assert "base" in capsys.readouterr().out
