"""scripts/metric_reached.py on a hand-made run whose answers are known."""

from __future__ import annotations

import json

import pytest

from agents.base import MetricEvent
from engine import Rules
from engine.store import GameStore
from tests.scripts import load_script


def _script():
    return load_script("metric_reached")


@pytest.fixture
def run_dir(tmp_path):
    with GameStore.open(tmp_path) as store:
        rid = store.create_run("policy", {}, Rules(), {"episodes": 10})
        # batch scores 80, 82, ..., 98 at 10 s intervals; a loss report in between has no score
        events = []
        for i in range(10):
            events.append(
                MetricEvent("episode", 10 * (i + 1), 0, 10.0 * (i + 1), {"batch_mean_score": 80.0 + 2 * i})
            )
            events.append(MetricEvent("update", 10 * (i + 1), 0, 10.0 * (i + 1) + 1, {"loss": 1.0}))
        store.log_metrics(rid, events)
    return tmp_path, rid


def test_gain_and_level_with_a_rolling_mean(run_dir, capsys):
    path, rid = run_dir
    # window 2: rolling means 81, 83, ..., 97; +6 over the first (81) is 87, first met by the 4th mean
    # (reports 4 and 5: 86 and 88), i.e. report 5 at 50 s, episode 50
    assert (
        _script().main(
            [
                str(rid),
                "batch_mean_score",
                "--window",
                "2",
                "--gain",
                "6",
                "--level",
                "95",
                "--level",
                "200",
                "--data-dir",
                str(path),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["first"], out["last"], out["best"], out["reports"]) == (81.0, 97.0, 97.0, 10)
    assert out["reached"][0] == {"target": 87.0, "seconds": 50.0, "episode": 50, "report": 5}
    assert out["reached"][1] == {"target": 95.0, "seconds": 90.0, "episode": 90, "report": 9}
    assert out["reached"][2] == {"target": 200.0, "seconds": None}


def test_unknown_metric_is_a_one_line_error(run_dir, capsys):
    path, rid = run_dir
    with pytest.raises(SystemExit) as e:
        _script().main([str(rid), "nope", "--data-dir", str(path)])
    assert e.value.code == 2
    assert "has no metric 'nope'" in capsys.readouterr().err
