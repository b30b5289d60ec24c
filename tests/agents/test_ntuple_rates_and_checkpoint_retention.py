"""Issue 44: the n-tuple learner reports the rate of every tile from 2048 up that its games reach
(4096 included, none it never reached), and a run's checkpoints but the newest lose the
temporal-coherence sums that only a resume needs (half an n-tuple file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Budget
from agents.checkpoint import load_checkpoint, read_checkpoint
from agents.ntuple import NTupleAgent, NTupleConfig
from agents.run.retention import RunCheckpoints, drop_arrays
from engine import Rules
from engine.store import GameStore


def tiny(**kw: object) -> NTupleAgent:
    return NTupleAgent(NTupleConfig(layout="4x4", **kw), seed=7)  # type: ignore[arg-type]


def test_rates_are_reported_for_every_tile_reached_from_2048_up() -> None:
    agent = tiny(window=10)
    # ten recent games: one reached 4096, one 2048, one 8192, the others 1024; none 16384
    tops = np.array([12, 11, 13] + [10] * 7, dtype=np.int8)
    agent._record(np.full(10, 20_000), tops)
    stats = agent.recent_stats()
    rates = {k: v for k, v in stats.items() if k.startswith("rate_")}
    assert rates == {"rate_2048": 0.3, "rate_4096": 0.2, "rate_8192": 0.1}
    # a tile once reached keeps its rate, at 0 once it leaves the recent games
    agent._record(np.full(10, 1_000), np.full(10, 7, dtype=np.int8))
    rates = {k: v for k, v in agent.recent_stats().items() if k.startswith("rate_")}
    assert rates == {"rate_2048": 0.0, "rate_4096": 0.0, "rate_8192": 0.0}


def test_a_fresh_learner_reports_the_2048_rate_only() -> None:
    agent = tiny(window=50)
    # (an event whose games were all restarts reports no rates: the last one with fresh games)
    events = [ev for ev in agent.train(Budget(episodes=20)) if "score" in ev.metrics]
    last = events[-1].metrics
    assert last["rate_2048"] == 0.0
    assert not any(k.startswith("rate_") and k != "rate_2048" for k in last)


def test_every_checkpoint_but_the_newest_loses_its_resume_only_arrays(data_dir: Path) -> None:
    agent = tiny(window=50)
    list(agent.train(Budget(episodes=30)))
    with GameStore.open(data_dir) as store:
        run_id = store.create_run("ntuple", agent.config.to_dict(), Rules(), {"episodes": 60})
        cps = RunCheckpoints(store, run_id, agent, keep=3)
        first = cps.save()
        arrays = read_checkpoint(first)[1]
        assert {"weights", "tc_errors", "tc_abs_errors"} <= set(arrays)
        full = first.stat().st_size
        list(agent.train(Budget(episodes=30)))
        second = cps.save(final=True)
    # the newest (what a resume loads) keeps the sums; the older one is the weights alone
    assert {"tc_errors", "tc_abs_errors"} <= set(read_checkpoint(second)[1])
    slim = read_checkpoint(first)[1]
    assert "tc_errors" not in slim and "tc_abs_errors" not in slim
    assert np.array_equal(slim["weights"], arrays["weights"])
    assert first.stat().st_size < 0.6 * full  # the two sums were two thirds of the arrays' bytes
    old = load_checkpoint(first)
    assert isinstance(old, NTupleAgent) and old._tc is None
    assert old.counters.episodes == 30
    assert load_checkpoint(second)._tc is not None  # type: ignore[attr-defined]


def test_dropping_arrays_a_file_lacks_leaves_it_untouched(tmp_path: Path) -> None:
    agent = tiny(save_tc=False)
    path = agent.save(tmp_path / "a.npz")
    before = path.read_bytes()
    assert drop_arrays(path, ("tc_errors", "tc_abs_errors")) == 0
    assert path.read_bytes() == before
