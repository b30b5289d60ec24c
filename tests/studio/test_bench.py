"""``python main.py bench``: the registry, the figures' shape and their ratios."""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.commands.bench import BENCHMARKS, _resolve


def test_every_registered_benchmark_resolves():
    for name, (target, help_text) in BENCHMARKS.items():
        assert callable(_resolve(target)) and help_text, name


def test_bench_engine_json(capsys):
    code = main(["bench", "engine", "--json", "--seconds", "0.3", "--rounds", "1", "-o", "sizes=1,8"])
    out, err = capsys.readouterr()
    assert code == 0 and "bench engine" in err  # progress on stderr, JSON alone on stdout
    report = json.loads(out)
    assert report["benchmark"] == "engine" and report["baseline"] == "plain_python"
    results = report["results"]
    assert list(results) == ["plain_python", "game_api", "jitted_playout", "batch_1", "batch_8"]
    base = results["plain_python"]["steps_per_s"]
    assert results["plain_python"]["ratio"] == 1.0
    for key, row in results.items():
        assert row["steps_per_s"] > 0 and row["steps"] > 0
        assert row["ratio"] == pytest.approx(row["steps_per_s"] / base, rel=0.01), key
    # the fast paths are faster than plain Python by a wide margin even on a busy machine
    assert results["game_api"]["ratio"] > 5 and results["jitted_playout"]["ratio"] > 50
    assert report["info"]["clock"] == "process CPU time"


def test_bench_engine_text(capsys):
    assert (
        main(["bench", "engine", "--seconds", "0.2", "--rounds", "1", "-o", "sizes=4", "-o", "clock=wall"])
        == 0
    )
    out = capsys.readouterr().out
    assert "(a) plain Python reference" in out and "1.0x" in out and "BatchEngine N=4" in out
    assert "wall clock" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "nope=1"], "no option 'nope'"),
        (["-o", "sizes=0"], "sizes"),
        (["-o", "clock=sundial"], "clock"),
        (["-o", "sizes"], "KEY=VALUE"),
    ],
)
def test_bench_bad_options_are_one_line_errors(args, message, capsys):
    assert main(["bench", "engine", "--seconds", "0.1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bench_bad_flags_exit_with_usage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "engine", "--seconds", "-1"])
    assert e.value.code == 2 and "usage" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "nosuch"])


def test_bench_ntuple_with_two_workers(capsys):
    code = main(["bench", "ntuple", "--json", "--seconds", "0.3", "--rounds", "1", "-o", "layout=4x4",
                 "-o", "threads=2"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    assert report["info"]["threads"] == 2 and report["info"]["layout"] == "4x4"
    row = report["results"]["round_1"]
    assert row["moves_per_s"] > 0 and row["moves"] > 0 and row["moves_per_wall_s"] > 0
    assert main(["bench", "ntuple", "--seconds", "0.1", "-o", "threads=two"]) == 2
    assert "threads must be a whole number" in capsys.readouterr().err


def test_bench_gui_measures_stalls_key_latency_and_memory_per_agent(qtbot, data_dir, monkeypatch):
    """A smoke run of the GUI benchmark on the fake learner: every figure is there and finite."""
    import math

    from studio.commands.bench import BenchOptions
    from studio.commands.bench_gui import gui_benchmark
    from studio.progress import ProgressLine
    from tests.studio.train_fakes import register_fakes

    register_fakes(monkeypatch)
    options = BenchOptions(seconds=1.0, rounds=1, extra={"agent": "fake_learner", "load": "0"})
    import gc

    try:
        with ProgressLine("bench gui", total=1.0) as line:
            report = gui_benchmark(options, line)
        # the bench imports the agents as the app does, and freezes what is alive then
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the tests after this one in this process collect as usual
    keys = {m.key for m in report.measurements}
    for what in ("stall", "key"):
        for stat in ("p50", "p99", "max"):
            assert f"fake_learner_{what}_{stat}" in keys
    assert all(math.isfinite(m.value) and m.value > 0 for m in report.measurements)
    assert report.info["fake_learner_window_rss_mb"] > 0
    assert report.info["competing_process"] == "no"


def test_bench_sweep_reports_overhead_and_trials_per_hour(capsys):
    code = main(
        [
            "bench",
            "sweep",
            "--json",
            "-o",
            "backends=local1",
            "-o",
            "trials=2",
            "-o",
            "episodes=5",
            "-o",
            "eval_games=1",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    row = report["results"]["local1"]
    assert report["unit"] == "trials_per_hour" and report["info"]["trials"] == 2
    assert row["trials_per_hour"] == pytest.approx(3600 * 2 / row["wall_s"])
    assert 0 <= row["overhead_s"] <= row["wall_s"] / 2 and row["busy_s"] > 0


def test_key_to_paint_presses_only_legal_keys_and_restarts_a_finished_game(qtbot):
    """A key that moves nothing paints nothing: pressing Left on a board whose tiles sit on the left
    edge left the measurement waiting for ever, with no sample (the nan key-to-paint of a bench run)."""
    import numpy as np

    from engine.core import Direction, legal_mask, slide_unchecked
    from studio.commands.bench_gui import _key_to_paint
    from studio.widgets.board import BoardWidget

    start = np.array([[2, 0, 0, 0], [4, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    dead = np.array([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]])
    widget = BoardWidget(interactive=True)
    qtbot.addWidget(widget)
    widget.resize(300, 300)
    widget.show()
    widget.set_board(start)
    played: list[tuple[Direction, bool]] = []
    restarts: list[int] = []

    def on_move(direction: Direction) -> None:
        before = widget.board
        played.append((direction, bool(legal_mask(before)[int(direction)])))
        # two moves, then a board with no move left: the measurement must start a new game
        widget.set_board(slide_unchecked(before, direction)[0] if len(played) < 2 else dead)

    def new_game() -> None:
        restarts.append(1)
        widget.set_board(start)

    widget.moveRequested.connect(on_move)
    latencies = _key_to_paint(widget, 1.2, new_game)
    assert played and all(legal for _, legal in played)
    assert played[0][0] == Direction.RIGHT  # Left and Up move nothing on the first board: the next in turn
    assert restarts and len(latencies) == len(played)
    assert np.all(latencies >= 0)


def test_parse_options_types_defaults_and_one_line_errors():
    from studio.commands.bench import Option, parse_options

    known = {
        "games": Option("int", 16, 1, 100),
        "warmup": Option("float", 5.0, 0, 60),
        "ray": Option("bool", True),
        "clock": Option("choice", "cpu", choices=("cpu", "wall")),
        "sizes": Option("ints", [1, 2], 1, 8),
        "agents": Option("names", None, choices=("dqn", "mcts"), what="agent"),
        "checkpoint": Option("text"),
    }
    assert parse_options("x", {}, known) == {
        "games": 16,
        "warmup": 5.0,
        "ray": True,
        "clock": "cpu",
        "sizes": [1, 2],
        "agents": None,
        "checkpoint": None,
    }
    given = {"games": "3", "warmup": "0.5", "ray": "off", "clock": "wall", "sizes": "4, 8", "agents": "mcts"}
    got = parse_options("x", {**given, "checkpoint": "a=b.npz"}, known)
    assert got == {
        "games": 3,
        "warmup": 0.5,
        "ray": False,
        "clock": "wall",
        "sizes": [4, 8],
        "agents": ["mcts"],
        "checkpoint": "a=b.npz",
    }
    assert parse_options("x", {"dqn.lr": "0.1"}, known, prefixes=("dqn",))["games"] == 16
    bad = [
        (
            {"nope": "1"},
            "bench x has no option 'nope' (known: agents, checkpoint, clock, games, ray, sizes, warmup)",
        ),
        ({"games": "0"}, "games must be from 1 to 100, got 0"),
        ({"games": "2.5"}, "games must be a whole number, got '2.5'"),
        ({"warmup": "nan"}, "warmup must be from 0 to 60, got nan"),
        ({"ray": "maybe"}, "ray must be 1 or 0 (true/false, yes/no, on/off), got 'maybe'"),
        ({"clock": "sundial"}, "clock must be cpu or wall, got 'sundial'"),
        ({"sizes": "1,9"}, "sizes must be from 1 to 8, got 9"),
        ({"sizes": ","}, "sizes must be whole numbers like 1,2, got ','"),
        ({"agents": "dqn,x"}, "unknown agent 'x': choose from dqn, mcts"),
        ({"dqn.lr": "1"}, "bench x has no option 'dqn.lr'"),
    ]
    for extra, message in bad:
        with pytest.raises(ValueError) as e:
            parse_options("x", extra, known)
        assert message in str(e.value)


@pytest.mark.parametrize(
    ("bench", "option", "message"),
    [
        ("mcts", "games=0", "games must be from 1"),
        ("mcts", "ray=maybe", "ray must be 1 or 0"),
        ("ntuple", "cpp_net=theirs", "cpp_net must be studio or own"),
        ("ntuple", "search=1,9", "search must be from 1 to 5"),
        ("review", "clock=sundial", "clock must be cpu or wall"),
        ("sweep", "backends=cloud", "unknown backend 'cloud'"),
        ("torch", "agents=nope", "unknown agent 'nope'"),
        ("torch", "nope.lr=1", "bench torch has no option 'nope.lr'"),
        ("gui", "runs=5", "runs must be from 1 to 4"),
        ("gui-speed", "runs=2", "bench gui-speed has no option 'runs'"),
    ],
)
def test_every_benchmark_checks_its_options_first(bench, option, message, capsys):
    assert main(["bench", bench, "--seconds", "0.1", "--rounds", "1", "-o", option]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
