"""scripts/calibrate_rank_grades.py: the threshold fit on hand-made gaps with known answers, and a
tiny end-to-end run against a small n-tuple checkpoint."""

from __future__ import annotations

import json

import numpy as np

from agents.base import Budget
from agents.registry import create_agent
from tests.scripts import load_script


def _script():
    return load_script("calibrate_rank_grades")


def test_the_fit_on_a_hand_made_set():
    fit = _script().fit_thresholds
    gaps = np.array([0.01, 0.02, 0.03, 0.10, 0.12, 0.20, 0.40, 0.50])
    levels = np.array([1, 1, 2, 2, 3, 3, 4, 4])
    t1, t2, t3 = fit(gaps, levels)
    assert [mod_level(g, (t1, t2, t3)) for g in gaps] == levels.tolist()  # every move agrees
    assert 0.02 <= t1 < 0.03 and 0.10 <= t2 < 0.12 and 0.20 <= t3 < 0.40
    # one level only: everything on its side
    assert fit(gaps, np.full(8, 4))[2] < 0.01 + 1e-12


def mod_level(gap, ts):
    return _script().level_of(gap, ts)


def test_three_thresholds_recover_the_ones_that_made_the_levels():
    mod = _script()
    rng = np.random.default_rng(3)
    gaps = rng.uniform(0.0, 0.5, 4000)
    truth = (0.03, 0.08, 0.2)
    levels = np.array([mod.level_of(g, truth) for g in gaps], dtype=np.int64)
    fitted = mod.fit_thresholds(gaps, levels)
    assert np.allclose(fitted, truth, atol=0.006)  # within a percentile step of the gaps
    assert mod.spearman(gaps, levels) > 0.85 and abs(mod.spearman(gaps, rng.permutation(levels))) < 0.05
    assert mod.spearman(np.array([0.1, 0.2, 0.2, 0.3]), np.array([1, 2, 2, 3])) == 1.0
    # kept in order even when the data would cross them
    crossed = mod.fit_thresholds(np.array([0.1, 0.2, 0.3]), np.array([3, 2, 1]))
    assert crossed[0] <= crossed[1] <= crossed[2]


def test_end_to_end_prints_the_agreement_of_both_threshold_sets(tmp_path, capsys):
    agent = create_agent("ntuple", {"layout": "4x4"}, seed=5)
    for _ in agent.train(Budget(episodes=300)):
        pass
    path = agent.save(tmp_path / "small.npz")
    assert _script().main([str(path), "--games", "1", "--every", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["moves_graded"] == sum(out["points_grades"].values()) > 0
    assert out["current"]["thresholds"] == [0.02, 0.05, 0.15]
    for which in ("current", "fitted"):
        assert 0.0 <= out[which]["same_grade"] <= out[which]["within_one"] <= 1.0
