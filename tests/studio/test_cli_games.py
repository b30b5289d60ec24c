"""``python main.py games ...`` and ``runs ...``: expected output, one-line errors, files round trip."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from agents.base import MetricEvent
from engine import Direction, Rules, Spawn
from engine.store import HUMAN, GameRecorder, GameStore, Player, exchange
from studio.cli import CliError, main
from studio.commands.games import parse_ids
from studio.commands.runs import curve_summary


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _hand_game(store: GameStore) -> int:
    """2x3: left merges 2+2 and 4+4 (+12), then right; a 2 and a 4 spawn."""
    rules = Rules(rows=2, cols=3)
    start = np.array([[2, 2, 0], [0, 4, 4]])
    gid = store.start_game(source="human", rules=rules, seed=11, initial_board=start)
    store.log_move(
        gid, index=0, board_before=start, direction="left", reward=12, score_after=12, spawns=[Spawn(0, 2, 2)]
    )
    store.log_move(
        gid,
        index=1,
        board_before=np.array([[4, 0, 2], [8, 0, 0]]),
        direction="right",
        reward=0,
        score_after=12,
        spawns=[Spawn(1, 0, 4)],
    )
    store.finish_game(gid, "abandoned")
    return gid


def _played(store: GameStore, seed: int, moves: int, player: Player = HUMAN) -> int:
    with GameRecorder(store, player=player, seed=seed) as rec:
        for _ in range(moves):
            rec.play(rec.game.legal_moves()[0])
    assert rec.game_id is not None
    return rec.game_id


@pytest.fixture
def three_games(data_dir):
    with GameStore.open(data_dir) as s:
        ids = [_hand_game(s), _played(s, 1, 10), _played(s, 2, 5, Player("agent", "greedy"))]
        summaries = {i: s.get_game(i) for i in ids}
    return ids, summaries


def test_list_empty(capsys):
    assert run(capsys, "games", "list") == (0, "no games yet\n", "")


def test_list_table(capsys, three_games):
    _ids, s = three_games
    code, out, err = run(capsys, "games", "list")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0] == "ID  SOURCE  AGENT   STATUS      SCORE  MAX TILE  MOVES  BOARD  STARTED"
    assert [int(line.split()[0]) for line in lines[1:]] == [3, 2, 1]  # newest first
    assert lines[3].split()[:8] == ["1", "human", "-", "unfinished", "12", "8", "2", "2x3"]
    g3 = s[3]
    assert lines[1].split()[:8] == [
        "3",
        "agent",
        "greedy",
        "unfinished",
        str(g3.score),
        str(g3.max_tile),
        "5",
        "4x4",
    ]
    assert len(lines) == 4


def test_list_filters_limit_json(capsys, three_games):
    _, out, _ = run(capsys, "games", "list", "--source", "agent")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["3"]
    _, out, _ = run(capsys, "games", "list", "--agent", "greedy", "--min-tile", "2")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["3"]
    _, out, _ = run(capsys, "games", "list", "--limit", "1")
    assert out.splitlines()[-1] == "showing 1 of 3 games (--limit N for more)"
    _, out, _ = run(capsys, "games", "list", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == [3, 2, 1] and rows[2]["rules"]["rows"] == 2 and rows[2]["seed"] == 11
    assert run(capsys, "games", "list", "--until", "2000-01-01") == (0, "no games match these filters\n", "")


def test_status_words_are_the_windows(capsys, three_games):
    """One vocabulary (issue #33): the list, --status and the Games tab say playing / finished / unfinished."""
    from studio.text import GAME_STATUS_WORDS

    assert set(GAME_STATUS_WORDS.values()) == {"playing", "finished", "unfinished"}
    for word in ("unfinished", "abandoned"):  # the old word still filters, for scripts written against it
        _, out, _ = run(capsys, "games", "list", "--status", word)
        assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["3", "2", "1"]
    assert run(capsys, "games", "list", "--status", "finished")[1] == "no games match these filters\n"
    with pytest.raises(SystemExit) as e:
        main(["games", "list", "--status", "done"])
    assert e.value.code == 2 and "'playing', 'finished', 'unfinished'" in capsys.readouterr().err


def test_show(capsys, three_games):
    code, out, _ = run(capsys, "games", "show", "1", "--moves")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "game 1: human, unfinished"
    assert lines[1] == "rules: 2x3, p4 0.1, 2 start tiles, 1 spawn per move; seed 11"
    assert lines[2].startswith("started ") and ", ended " in lines[2]
    assert lines[3] == "score 12, max tile 8, 2 moves (up 0, left 1, down 0, right 1)"
    assert lines[5:8] == [
        "start               end (* = last new tile)",
        "   2     2     .       .     4     2",
        "   .     4     4       4*    .     8",
    ]
    assert lines[9:] == [
        "#  MOVE   REWARD  SCORE  MAX BEFORE  NEW TILE  PLAYER",
        "1  left       12     12           4  2@(0,2)   you",
        "2  right       0     12           8  4@(1,0)   you",
    ]


def test_export_import_round_trip(capsys, three_games, tmp_path):
    for suffix in (".npz", ".jsonl"):
        out_file = tmp_path / f"two{suffix}"
        code, out, _ = run(capsys, "games", "export", "2,3", "--out", str(out_file))
        assert (code, out) == (0, f"exported 2 games (15 moves) to {out_file}\n")
    with GameStore.open() as s:
        originals = {i: s.load_game(i) for i in (2, 3)}
    assert run(capsys, "games", "delete", "2-3")[:2] == (0, "deleted 2 games\n")
    code, out, _ = run(capsys, "games", "import", str(tmp_path / "two.npz"))
    assert (code, out) == (0, f"imported 2 games from {tmp_path / 'two.npz'} as id 4-5\n")
    with GameStore.open() as s:
        for original, copy in ((2, 4), (3, 5)):
            a, b = originals[original], s.load_game(copy)
            assert np.array_equal(a.layouts, b.layouts) and np.array_equal(a.moves, b.moves)
            assert np.array_equal(a.scores, b.scores) and a.rules == b.rules
            assert b.summary.source == a.summary.source and b.summary.agent == a.summary.agent
            assert b.summary.players == a.summary.players and b.summary.imported
    _, out, _ = run(capsys, "games", "list", "--source", "imported")
    # imports keep the original start times: the copy of game 3 (5) lists before that of game 2
    assert [ln.split()[:3] for ln in out.splitlines()[1:]] == [
        ["5", "agent", "(imported)"],
        ["4", "human", "(imported)"],
    ]
    _, out, _ = run(capsys, "games", "list", "--source", "agent")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["5"]


def test_importing_the_same_games_again_adds_nothing(capsys, three_games, tmp_path):
    """Issue #33: the same export imported twice made duplicates without a word."""
    one, two = tmp_path / "one.jsonl", tmp_path / "two.npz"
    run(capsys, "games", "export", "1", "--out", str(one))
    run(capsys, "games", "export", "2,3", "--out", str(two))
    # Games exported from this library are in it already; the jsonl of the same game too.
    code, out, _ = run(capsys, "games", "import", str(two))
    assert (code, out) == (0, f"imported 0 games from {two}, 2 already in the library (id 2-3)\n")
    assert run(capsys, "games", "delete", "1")[0] == 0
    code, out, _ = run(capsys, "games", "import", str(one))
    assert (code, out) == (0, f"imported 1 game from {one} as id 4\n")
    code, out, _ = run(capsys, "games", "import", str(one))
    assert (code, out) == (0, f"imported 0 games from {one}, 1 already in the library (id 4)\n")
    # A file with a new game twice and a game of the library: the new one added once.
    with GameStore.open() as s:
        third = s.load_game(3)
        s.delete_games([3])
        twice = tmp_path / "twice.jsonl"
        exchange.write_jsonl([third, third, s.load_game(2)], twice)
    code, out, _ = run(capsys, "games", "import", str(twice))
    assert (code, out) == (0, f"imported 1 game from {twice} as id 5, 2 already in the library (id 2, 5)\n")
    with GameStore.open() as s:
        assert sorted(g.id for g in s.list_games()) == [2, 4, 5]
        assert np.array_equal(s.load_game(5).moves, third.moves)


def test_a_game_with_two_hand_overs_is_one_mixed_game(capsys, data_dir):
    greedy = Player("agent", "greedy", str(data_dir / "greedy-1.npz"))
    with GameStore.open(data_dir) as s:
        rec = GameRecorder(s, seed=8, lazy=True)
        for who in (HUMAN,) * 2 + (greedy,) * 3 + (HUMAN,):
            rec.play(rec.game.legal_moves()[0], who)
        rec.close()
    _, out, _ = run(capsys, "games", "list")
    lines = out.splitlines()
    assert len(lines) == 2 and lines[1].split()[:7] == [
        "1",
        "mixed",
        "greedy",
        "unfinished",
        str(rec.score),
        str(rec.game.max_tile),
        "6",
    ]
    _, out, _ = run(capsys, "games", "list", "--source", "mixed", "--json")
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["source"] == "mixed" and [p["kind"] for p in row["players"]] == ["human", "agent"]
    assert run(capsys, "games", "list", "--source", "human")[1] == "no games match these filters\n"
    _, out, _ = run(capsys, "games", "show", "1", "--moves")
    lines = out.splitlines()
    assert lines[0] == "game 1: mixed (you + greedy (greedy-1.npz)), unfinished"
    assert lines[1] == "players: you 3 moves, greedy (greedy-1.npz) 3 moves"
    table_rows = lines[lines.index(next(ln for ln in lines if ln.startswith("#  MOVE"))) + 1 :]
    assert [ln.split("  ")[-1].strip() for ln in table_rows] == ["you"] * 2 + [
        "greedy (greedy-1.npz)"
    ] * 3 + ["you"]


def test_export_all_with_filters(capsys, three_games, tmp_path):
    path = tmp_path / "human.jsonl"
    code, out, _ = run(capsys, "games", "export", "--all", "--source", "human", "--out", str(path))
    assert (code, out) == (0, f"exported 2 games (12 moves) to {path}\n")
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == [1, 2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["games", "export", "1", "--all", "--out", "x.npz"], "give game ids or --all (not both)"),
        (["games", "export", "--out", "x.npz"], "give game ids or --all (not both)"),
        (
            ["games", "export", "1", "--source", "human", "--out", "x.npz"],
            "filters go with --all; with ids, the ids choose the games",
        ),
        (["games", "export", "1x", "--out", "x.npz"], "'1x' is not a game id or range (e.g. 7 or 3-12)"),
        (["games", "export", "1", "--out", "x.csv"], "x.csv: unknown file type '.csv': use .npz or .jsonl"),
        (["games", "export", "1", "9", "--out", "x.npz"], "no game 9"),
        (["games", "show", "9"], "no game 9"),
        (["games", "delete", "1", "9"], "no game 9: nothing deleted"),
        (
            ["games", "list", "--since", "last tuesday"],
            "'last tuesday' is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM",
        ),
        (["games", "import", "missing.jsonl"], "missing.jsonl: no such file"),
    ],
)
def test_one_line_errors(capsys, three_games, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err == f"python main.py games: error: {message}\n"
    assert not (tmp_path / "x.npz").exists()
    with GameStore.open() as s:
        assert s.count_games() == 3


def test_bad_flag_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["games", "list", "--min-score", "lots"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "argument --min-score: 'lots' is not a whole number" in err


def test_import_of_a_bad_file_changes_nothing(capsys, three_games, tmp_path):
    good = tmp_path / "good.jsonl"
    run(capsys, "games", "export", "1", "2", "--out", str(good))
    lines = good.read_text().splitlines()
    broken = json.loads(lines[1])
    broken["layouts"][4][0][0] = 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    code, out, err = run(capsys, "games", "import", str(bad))
    assert (code, out) == (2, "")
    assert err == (
        "python main.py games: error: bad.jsonl line 2: layouts: tile value 3 is not 0 or a power of "
        "two >= 2\n"
    )
    with GameStore.open() as s:
        assert s.count_games() == 3


def test_delete(capsys, three_games):
    assert run(capsys, "games", "delete", "1-2") == (0, "deleted 2 games\n", "")
    _, out, _ = run(capsys, "games", "list")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["3"]


def test_foreign_database_is_refused(capsys, data_dir):
    path = data_dir / "studio.sqlite3"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE photos (id INTEGER)")
    con.commit()
    con.close()
    before = path.read_bytes()
    code, out, err = run(capsys, "games", "list")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "is an SQLite database of another program (no application_id); 2048 Studio will not open" in err
    assert path.read_bytes() == before


def test_parse_ids():
    assert parse_ids(["3", "7,9", "12-14", "9"]) == [3, 7, 9, 12, 13, 14]
    with pytest.raises(CliError, match="runs backwards"):
        parse_ids(["5-2"])


# -------------------------------------------------------------------------------------------- runs


@pytest.fixture
def a_run(data_dir):
    with GameStore.open(data_dir) as s:
        rid = s.create_run("dqn", {"lr": 0.001, "gamma": 0.99}, Rules(), {"episodes": 10}, seed=1)
        events = []
        for i in range(10):
            events.append(
                MetricEvent(
                    "episode", i + 1, (i + 1) * 100, i + 1.0, {"score": 100 * (i + 1), "max_tile": 128}
                )
            )
            events.append(MetricEvent("update", i + 1, (i + 1) * 100, i + 1.0, {"loss": 1.0 / (i + 1)}))
        s.log_metrics(rid, events)
        s.log_metrics(rid, [MetricEvent("info", 10, 1000, 10.0, {}, message="done")])
        s.add_checkpoint(rid, data_dir / "checkpoints" / "run1.npz", 10, 1000, final=True)
        s.set_run_status(rid, "finished")
    return rid


def test_runs_list(capsys, a_run):
    assert run(capsys, "runs", "list", "--status", "failed") == (0, "no runs match\n", "")
    _code, out, _ = run(capsys, "runs", "list")
    lines = out.splitlines()
    assert lines[0] == "ID  AGENT  STATUS    EPISODES  STEPS  TIME  LAST SCORE  EVAL  DISK  SWEEP  CREATED"
    assert lines[1].split()[:7] == ["1", "dqn", "finished", "10", "1000", "0:10", "1000"]


def test_runs_list_empty(capsys):
    assert run(capsys, "runs", "list") == (0, "no training runs yet\n", "")


def test_runs_show(capsys, a_run, data_dir):
    code, out, _ = run(capsys, "runs", "show", str(a_run))
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "run 1: dqn, finished"
    assert lines[2] == "rules: 4x4, p4 0.1; seed 1; budget: episodes 10"
    assert lines[3] == "progress: 10 episodes, 1000 steps, 0:10 of training, 21 events logged"
    assert lines[4] == "last metrics: score 1000, max_tile 128, loss 0.1"
    assert lines[5:8] == ["config:", "  gamma = 0.99", "  lr = 0.001"]
    assert "checkpoints:" in lines
    cp = lines[lines.index("checkpoints:") + 2].split()
    assert cp[:4] == ["1", "10", "1000", "final"] and cp[-1] == str(data_dir / "checkpoints" / "run1.npz")
    head = lines.index("curves (mean per tenth of the run, by steps):")
    assert lines[head + 1].split() == ["PART", "STEPS", "score", "max_tile", "loss"]
    assert lines[head + 2].split() == ["0-10%", "100-190", "100", "128", "1"]
    assert lines[head + 11].split() == ["90-100%", "910-1000", "1000", "128", "0.1"]
    assert lines[head + 12].split() == ["score", "▁▂▃▃▄▅▆▆▇█"]
    assert lines[-1] == "last message (episode 10): done"


def test_runs_show_missing(capsys):
    assert run(capsys, "runs", "show", "4") == (2, "", "python main.py runs: error: no run 4\n")


def test_curve_summary_by_events_when_steps_stand_still():
    cols = {
        "episode": np.arange(20),
        "step": np.zeros(20, dtype=np.int64),
        "elapsed": np.zeros(20),
        "score": np.arange(20, dtype=float),
    }
    text = curve_summary(cols)
    lines = text.splitlines()
    assert lines[0] == "curves (mean per tenth of the run, by events):"
    assert lines[2].split() == ["0-10%", "0-1.9", "0.5"]
    assert lines[11].split() == ["90-100%", "17.1-19", "18.5"]


def test_show_marks_direction_counts(capsys, data_dir):
    with GameStore.open(data_dir) as s:
        with GameRecorder(s, seed=3) as rec:
            for d in (Direction.LEFT, Direction.RIGHT, Direction.LEFT):
                rec.play(d)  # illegal ones change nothing
        n = rec.moves
    _, out, _ = run(capsys, "games", "show", "1")
    assert f"{n} moves (up 0, left " in out


def test_an_impossible_time_is_refused_at_import_and_a_bad_row_lists_as_unknown(tmp_path, data_dir, capsys):
    """Issue 17: one imported game with "started": 1e20 made every later listing fail."""
    from engine.store import GameRecorder as Recorder

    with GameStore.open(data_dir) as store:
        rec = Recorder(store, seed=3)
        for d in (Direction.LEFT, Direction.UP, Direction.RIGHT, Direction.DOWN):
            rec.play(d)
        rec.close()
        good = store.list_games()[0].id
        store.export_jsonl([good], tmp_path / "g.jsonl")
    line = json.loads((tmp_path / "g.jsonl").read_text().splitlines()[0])
    line["started"] = 1e20
    (tmp_path / "bad.jsonl").write_text(json.dumps(line) + "\n")
    assert main(["--data-dir", str(data_dir), "games", "import", str(tmp_path / "bad.jsonl")]) == 2
    assert "between 1970 and 9999" in capsys.readouterr().err
    # A row that is bad anyway (an older build let it in) shows as "?", and the listing lives.
    con = sqlite3.connect(data_dir / "studio.sqlite3")
    con.execute("UPDATE games SET started = 1e20 WHERE id = ?", (good,))
    con.commit()
    con.close()
    assert main(["--data-dir", str(data_dir), "games", "list"]) == 0
    assert "?" in capsys.readouterr().out
    assert main(["--data-dir", str(data_dir), "games", "show", str(good)]) == 0


def test_eval_refuses_an_absurd_game_count_before_doing_anything(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--agent", "random", "--games", "99999999999999999999999"])
    assert exit_info.value.code == 2
    assert (
        "argument --games: 99999999999999999999999 is out of range (from 1 to 10,000,000)"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["runs", "show", "99999999999999999999"],
        ["runs", "stop", "0"],
        ["runs", "export", "99999999999999999999", "x.csv"],
        ["games", "show", "99999999999999999999"],
        ["games", "delete", "99999999999999999999"],
        ["games", "list", "--limit", "99999999999999999999"],
        ["replay", "99999999999999999999"],
        ["train", "--resume", "99999999999999999999"],
    ],
)
def test_an_id_past_what_the_store_holds_is_a_one_line_error(argv, data_dir, capsys):
    try:
        code = main(["--data-dir", str(data_dir), *argv])
    except SystemExit as e:  # argparse refuses it while parsing
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "\n" not in err and (
        "is not an id" in err or "is not a game id" in err or "is out of range (from 1 to 2^63 - 1)" in err
    )


def test_runs_export_into_a_directory_is_a_one_line_error(data_dir, tmp_path, capsys):
    with GameStore.open(data_dir) as store:
        store.create_run("dqn", {}, Rules(), {"episodes": 1})
    assert main(["--data-dir", str(data_dir), "runs", "export", "1", str(tmp_path)]) == 2
    assert "cannot write" in capsys.readouterr().err
