"""scripts/checkpoint_curve.py: a run's checkpoints, picked by training time, played as ``eval --fast``
plays them (the same figures), kept in a cache, tabled and drawn; bad input is one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.base import Agent, Budget
from agents.checkpoint import read_checkpoint
from agents.ntuple import NTupleAgent, NTupleConfig
from tests.agents.act_games import act_games
from tests.scripts import load_script

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

MINUTES = (5.0, 10.0, 14.8, 20.0, 31.0)  # training time of each checkpoint (14.8: a save a little early)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five checkpoints of one tiny n-tuple run, trained on between saves; their times set by hand so
    that picking by minutes has exact answers (names in no time order: the order comes from inside)."""
    d = tmp_path_factory.mktemp("ckpts") / "run-1"
    d.mkdir()
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=5)
    for i, minutes in enumerate(MINUTES):
        list(agent.train(Budget(steps=4000)))
        agent.counters.seconds = 60.0 * minutes
        agent.counters.cpu_seconds = 30.0 * minutes  # as if it had half a core
        agent.save(d / f"ckpt-{'edcba'[i]}.npz")
    return d


def test_rows_equal_the_games_act_plays_and_eval_fast_per_checkpoint_in_training_order(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from studio.cli import main

    cc = load_script("checkpoint_curve")
    run = cc.parse_run(f"tiny={run_dir}")
    assert run.label == "tiny" and len(run.files) == 5
    search = {"depth": 1, "depths_policy": [], "downgrade_from": 0}
    cc.evaluate_runs([run], games=4, seed=123, search=search, threads=1, every_minutes=0)
    assert [r["minutes"] for r in run.rows] == pytest.approx(MINUTES)
    assert [r["moves"] for r in run.rows] == [4000, 8000, 12000, 16000, 20000]
    for row in run.rows:
        agent = Agent.load(row["checkpoint"])  # saved at 1-ply, no downgrading: the search asked for
        scores, tiles = act_games(agent, 4, 123)
        assert row["mean_score"] == sum(scores) / 4
        assert row["rate_16384"] == sum(t >= 16384 for t in tiles) / 4
        assert (
            row["games_trained"]
            == read_checkpoint(row["checkpoint"], arrays=False)[0]["counters"]["episodes"]
        )
    # eval --fast on the run's folder: a column per checkpoint, in the same (training) order, same figures
    argv = ["eval", "--checkpoint", str(run_dir), "--fast", "--games", "4", "--seed", "123", "--json"]
    assert main(argv) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["checkpoint"] for r in results] == [row["checkpoint"] for row in run.rows]
    assert [r["mean_score"] for r in results] == [row["mean_score"] for row in run.rows]
    assert [r["trained"]["games"] for r in results] == [row["games_trained"] for row in run.rows]
    assert [r["label"] for r in results] == [f"ntuple ({Path(row['checkpoint']).name})" for row in run.rows]


def test_every_minutes_keeps_one_per_period_and_the_last(run_dir: Path) -> None:
    cc = load_script("checkpoint_curve")
    files = sorted(run_dir.glob("*.npz"))
    minutes = [t["seconds"] / 60 for _, t in cc.pick(files, 10.0)]
    # 10 (5 is before the first period), 20 (14.8 is early by more than 5 % of 10 from 20), then the last
    assert minutes == pytest.approx([10.0, 20.0, 31.0])
    assert [t["seconds"] / 60 for _, t in cc.pick(files, 5.0)] == pytest.approx([5.0, 10.0, 14.8, 20.0, 31.0])
    assert len(cc.pick(files, 0)) == 5
    meta, arrays = read_checkpoint(run_dir / "ckpt-e.npz", arrays=False)  # the metadata only
    assert arrays == {} and meta["counters"]["steps"] == 4000 and meta["agent"] == "ntuple"


def test_cache_plays_each_checkpoint_once_and_survives_a_torn_line(run_dir: Path, tmp_path: Path) -> None:
    cc = load_script("checkpoint_curve")
    cache = tmp_path / "cache.jsonl"
    played: list[str] = []

    def play(path: Path, **kw: object) -> dict[str, object]:
        played.append(Path(path).name)
        return {"mean_score": 1000.0 + len(played), "rates": {"16384": 0.25, "32768": 0.0}}

    search = {"depth": 1, "depths_policy": [], "downgrade_from": 0}
    first = cc.Run("a", sorted(run_dir.glob("*.npz")))
    cc.evaluate_runs(
        [first], games=3, seed=1, search=search, threads=1, every_minutes=0, cache=cache, play=play
    )
    assert len(played) == 5 and len(cache.read_text().splitlines()) == 5
    with open(cache, "a") as fh:
        fh.write('{"key": "torn')  # a run killed mid-write
    again = cc.Run("a", sorted(run_dir.glob("*.npz")))
    cc.evaluate_runs(
        [again], games=3, seed=1, search=search, threads=1, every_minutes=0, cache=cache, play=play
    )
    assert len(played) == 5  # nothing played again
    extra = cc.Run("a", [run_dir / "ckpt-a.npz"])  # new results go on a line of their own after the torn one
    cc.evaluate_runs(
        [extra], games=4, seed=1, search=search, threads=1, every_minutes=0, cache=cache, play=play
    )
    assert len(cc.read_cache(cache)) == 6 and cache.read_text().splitlines()[5] == '{"key": "torn'

    assert [r["mean_score"] for r in again.rows] == [r["mean_score"] for r in first.rows]
    other = cc.Run("a", sorted(run_dir.glob("*.npz")))  # another search: its own results
    cc.evaluate_runs(
        [other],
        games=3,
        seed=1,
        search={**search, "depth": 2},
        threads=1,
        every_minutes=0,
        cache=cache,
        play=play,
    )
    assert len(played) == 11


def test_main_prints_the_table_json_and_draws_the_plot(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cc = load_script("checkpoint_curve")
    out = tmp_path / "curve.png"
    args = [
        f"tiny={run_dir}",
        str(run_dir / "ckpt-a.npz"),
        "--games",
        "2",
        "--cache",
        str(tmp_path / "c.jsonl"),
    ]
    assert cc.main([*args, "--every-minutes", "10", "--out", str(out), "--size", "800x500"]) == 0
    text = capsys.readouterr().out
    first, second = text.split("\n\n")
    assert first.splitlines()[:2] == ["tiny", "trained   moves  games   mean  16384  32768"], first
    assert [line.split()[:2] for line in first.splitlines()[2:]] == [
        ["10:00", "8,000"],
        ["20:00", "16,000"],
        ["31:00", "20,000"],
    ]
    assert second.splitlines()[0] == str(run_dir / "ckpt-a.npz") and "31:00" in second
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    assert (image.width(), image.height()) == (800, 500)
    assert cc.main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in rows] == ["tiny", str(run_dir / "ckpt-a.npz")]
    assert len(rows[0]["rows"]) == 5 and len(rows[1]["rows"]) == 1
    assert rows[1]["rows"][0]["minutes"] == pytest.approx(31.0)  # ckpt-a: the last one saved


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{missing}"], "no checkpoint or checkpoint folder"),
        (["{empty}"], "holds no checkpoint"),
        (["{run}", "--games", "0"], "games must be between 1 and"),
        (["{run}", "--games", "99999999999999"], "games must be between 1 and"),
        (["{run}", "--threads", "0"], "threads must be at least 1"),
        (["{run}", "--every-minutes", "nan"], "--every-minutes must be"),
        (["{run}", "--every-minutes", "-5"], "--every-minutes must be"),
        (["{run}", "--depths-policy", "3,x"], "is not depths"),
        (["{run}", "--depth", "9"], "search_depth"),
        (["{junk}"], "not an .npz archive"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], says: str, run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cc = load_script("checkpoint_curve")
    (tmp_path / "empty").mkdir()
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    paths = {
        "missing": tmp_path / "nope",
        "empty": tmp_path / "empty",
        "run": run_dir,
        "junk": tmp_path / "junk.npz",
    }
    assert cc.main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("x", "axis", "words", "xs"),
    [
        ("time", "elapsed", "training time", [60.0 * m for m in MINUTES]),
        ("moves", "step", "moves trained", [4000.0 * (i + 1) for i in range(len(MINUTES))]),
        # --x cpu: a run with a CPU-seconds budget on a busy machine is read against the CPU it used
        ("cpu", "elapsed", "training CPU time (all threads)", [30.0 * m for m in MINUTES]),
    ],
)
def test_the_plot_draws_against_training_time_or_moves(
    x: str,
    axis: str,
    words: str,
    xs: list[float],
    run_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # --x moves: an A/B at equal moves whose arms train at different speeds lines up by moves, not minutes
    from PySide6.QtWidgets import QLabel

    import docs.make_learning_curves as mlc

    cc = load_script("checkpoint_curve")
    seen: dict[str, object] = {}
    real_render = mlc.render

    def render(figure, curves, size, out):  # type: ignore[no-untyped-def]
        seen["axis"] = curves.x_axis
        seen["title"] = curves.x_title
        seen["caption"] = [w.text() for w in figure.findChildren(QLabel) if w.text().startswith("x axis:")]
        drawn = [c for c in curves._curves if c.metric == "ckpt_mean_score"]
        seen["xs"] = [list(c.item.getData()[0]) for c in drawn]
        return real_render(figure, curves, size, out)

    monkeypatch.setattr(mlc, "render", render)
    out = tmp_path / "curve.png"
    argv = [f"tiny={run_dir}", "--games", "2", "--out", str(out), "--size", "800x500"]
    assert cc.main([*argv, "--x", x] if x != "time" else argv) == 0
    assert seen["axis"] == axis and out.exists()
    assert seen["caption"] == [
        f"x axis: {words} · each point: a checkpoint playing the same 2 seeded games, 1-ply"
    ]
    assert seen["xs"] == [pytest.approx(xs)]
    assert (seen["title"] == "CPU time") == (x == "cpu")  # the axis says what it holds
