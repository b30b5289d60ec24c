"""Fuzz: random and adversarial argument lists for every command of ``python main.py``.

The property: ``main(argv)`` ends with 0 (done), 2 (refused, with one line) or 1 where a command's
result is a failure it reports (``replay --verify`` of a bad game, a run that diverges), or is
interrupted by the fuzzer's own clock (a valid command that would run on: ``train --minutes 1e6``);
never a traceback, never another exception, and on exit 2 the store is as it was.

Each case runs in this process (a process per case would make the suite take an hour), on its own
copy of a small store with games, a run and its checkpoint. A case that is still working after
``CLOCK_S`` gets a KeyboardInterrupt, as a user's Ctrl-C (every command must take that cleanly too).
"""

from __future__ import annotations

import io
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.registry import agent_names, get_agent_class
from engine.store import GameStore
from studio.cli import main
from tests.fuzz.common import FUZZ, count

#: Seconds a case may work before the fuzzer presses Ctrl-C.
CLOCK_S = 1.5

HOSTILE = [
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "3",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e-300",
    "1e308",
    "65536",
    "100000",
    "4294967296",
    "1000000000000",
    "99999999999999999999999",
    str(2**63),
    str(2**63 - 1),
    str(-(2**63)),
    "0x10",
    "abc",
    "é✓",
    "1,2",
    "3-1",
    "1-5",
    "..",
    "/",
    "/dev/null",
    "/etc/passwd",
    "--",
    "-",
    "true",
    "{}",
    "[]",
    "2026-13-45",
    "1970-01-01",
]

SUBCOMMANDS: dict[str, list[str]] = {
    "games list": [
        "--source",
        "--agent",
        "--status",
        "--min-score",
        "--min-tile",
        "--since",
        "--until",
        "--limit",
        "--json",
    ],
    "games show": ["--moves"],
    "games export": ["--all", "--out", "--source", "--since"],
    "games import": [],
    "games delete": [],
    "runs list": ["--agent", "--status", "--limit"],
    "runs show": [],
    "runs export": [],
    "runs stop": [],
    "replay": ["--speed", "--step", "--from", "--to", "--verify"],
    "eval": [
        "--agent",
        "--preset",
        "--checkpoint",
        "--games",
        "--seed",
        "--json",
        "--no-log",
        "--rows",
        "--cols",
        "--workers",
        "--backend",
        "--ray-address",
        "--set",
        "--fast",
        "--fast-threads",
    ],
    "train": [
        "--agent",
        "--preset",
        "--episodes",
        "--minutes",
        "--steps",
        "--seed",
        "--rows",
        "--cols",
        "--resume",
        "--checkpoint-every",
        "--log-every",
        "--backend",
        "--ray-address",
    ],
    "play": ["--text", "--rows", "--cols", "--p4", "--seed"],
    "review": ["--reviewer", "--depth", "--json", "--source", "--since"],
    "progress": ["--source", "--since", "--reviewer", "--depth", "--limit", "--json"],
    "sweep": [
        "--agent",
        "--preset",
        "--grid",
        "--random",
        "--samples",
        "--seeds",
        "--seed",
        "--metric",
        "--episodes",
        "--minutes",
        "--steps",
        "--eval-games",
        "--workers",
        "--backend",
        "--resume",
        "--json",
    ],
    "sweeps list": ["--limit"],
    "sweeps show": ["--json"],
    "sweeps delete": [],
    "bench engine": ["--seconds", "--rounds", "--seed", "--json", "-o"],
    "bench ntuple": ["--seconds", "--rounds", "--seed", "-o"],
    "bench mcts": ["--seconds", "--rounds", "-o"],
}

#: Every agent's knob flags (train and eval take them).
KNOB_FLAGS = sorted(
    {
        "--" + spec.name.replace("_", "-")
        for name in agent_names()
        for spec in get_agent_class(name).config_cls.specs()
    }
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store: a few games, a finished dqn run with its checkpoint, a game file to import."""
    root = tmp_path_factory.mktemp("fuzz-cli-template")
    d = str(root / "data")
    assert (
        main(["--data-dir", d, "eval", "--agent", "random", "--games", "3", "--rows", "2", "--cols", "3"])
        == 0
    )
    assert (
        main(["--data-dir", d, "train", "--agent", "dqn", "--episodes", "1", "--rows", "2", "--cols", "3"])
        == 0
    )
    assert main(["--data-dir", d, "games", "export", "1-3", "--out", str(root / "games.jsonl")]) == 0
    return root


@pytest.fixture(scope="module")
def argv_words(template: Path) -> list[str]:
    """Words to draw from; ``ROOT/`` stands for the case's own copy of the template (a case that
    writes over a file it was given must not spoil the next case's)."""
    checkpoint = next((template / "data" / "checkpoints").rglob("*.npz")).relative_to(template)
    return [
        *HOSTILE,
        "ROOT/games.jsonl",
        f"ROOT/{checkpoint}",
        "ROOT/data",
        "ROOT/nowhere/x.npz",
        "x" * 5000 + ".npz",
        *agent_names(),
        "dqn-seed000",
        "ntuple-hour",
    ]


def snapshot(data_dir: Path) -> tuple[int, list[tuple[int, str, int]], list[str]]:
    with GameStore.open(data_dir) as store:
        runs = [(r.id, r.status, r.episodes) for r in store.list_runs()]
        games = store.count_games()
    files = sorted(
        str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.suffix in (".npz", ".jsonl")
    )
    return games, runs, files


@st.composite
def command_lines(draw: st.DrawFn, words: list[str]) -> list[str]:
    sub = draw(st.sampled_from(sorted(SUBCOMMANDS)))
    argv = sub.split()
    flags = SUBCOMMANDS[sub] + (KNOB_FLAGS if sub in ("train", "eval", "sweep") else [])
    value = st.sampled_from(words)
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 9))
        if kind <= 5 and flags:
            argv += [draw(st.sampled_from(flags)), draw(value)]
        elif kind <= 7:
            argv.append(draw(value))
        elif kind == 8 and flags:
            argv.append(draw(st.sampled_from(flags)))
        else:
            argv.append(draw(st.text(max_size=12)))
    if (
        draw(st.booleans())
        and argv[0] in ("train", "eval")
        and "--agent" not in argv
        and "--preset" not in argv
    ):
        argv += ["--agent", draw(st.sampled_from(agent_names()))]
    # Small boards keep valid games short; many processes are not what this fuzzes.
    return [w.replace("\x00", "") for w in argv]


#: Commands that do their work on the template store; the fuzzer spoils one word or adds one flag.
VALID = [
    "train --agent dqn --episodes 1 --rows 2 --cols 3 --seed 1",
    "train --agent policy --episodes 1 --rows 2 --cols 3",
    "train --agent imitation --episodes 1 --rows 2 --cols 3",
    "train --resume 1 --episodes 1",
    "eval --agent greedy --games 1 --rows 2 --cols 3 --no-log",
    "eval --agent expectimax --games 1 --rows 2 --cols 2 --seed 3",
    "eval --checkpoint CHECKPOINT --games 1",
    "eval --agent expectimax --depth 1 --games 2 --fast --seed 1",
    "replay 1 --speed 0",
    "replay 2 --verify",
    "games show 1 --moves",
    "games export 1-3 --out out.npz",
    "games import GAMES",
    "games delete 2",
    "games list --min-score 1 --since 2020-01-01 --json",
    "runs show 1",
    "runs export 1 out.csv",
    "runs list --status finished",
    "play --text --rows 2 --cols 2 --seed 1",
    "review 1 --reviewer expectimax --depth 2 --json",
    "review 2 --reviewer expectimax --depth 1",
    "progress --source all --json",
    "progress --source evaluation --since 2020-01-01 --reviewer greedy",
    "sweeps list --limit 3",
]


@st.composite
def spoiled_command_lines(draw: st.DrawFn, words: list[str], checkpoint: str) -> list[str]:
    line = draw(st.sampled_from(VALID)).replace("CHECKPOINT", checkpoint).replace("GAMES", "ROOT/games.jsonl")
    argv = line.split()
    sub = " ".join(argv[:2]) if argv[0] in ("games", "runs", "bench", "sweeps") else argv[0]
    flags = SUBCOMMANDS[sub] + (KNOB_FLAGS if sub in ("train", "eval", "sweep") else [])
    if not flags or draw(st.booleans()):
        argv[draw(st.integers(1, len(argv) - 1))] = draw(st.sampled_from(words))
    else:
        argv += [draw(st.sampled_from(flags)), draw(st.sampled_from(words))]
    return argv


@pytest.fixture
def clock() -> Iterator[None]:
    def ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def run_case(argv: list[str], template: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    count("cli " + argv[0])
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        root = Path(tmp) / "case"
        shutil.copytree(template, root)
        argv = [w.replace("ROOT/", f"{root}/") for w in argv]
        data_dir = root / "data"
        before = snapshot(data_dir)
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # play / replay --step read keys: none come
        monkeypatch.chdir(tmp)  # a relative --out lands here, not in the checkout
        interrupted = False
        signal.setitimer(signal.ITIMER_REAL, CLOCK_S)
        try:
            code = main(["--data-dir", str(data_dir), *argv])
        except SystemExit as e:  # argparse: 2 for a refusal, 0 for --help
            code = e.code if isinstance(e.code, int) else 2
        except KeyboardInterrupt:  # the clock struck outside the command's own handler
            interrupted, code = True, 130
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out, err = capsys.readouterr()
        assert "Traceback" not in err + out, f"{argv}: {err[-2000:]}"
        assert code in (0, 1, 2) or (code == 130 and (interrupted or "interrupted" in err)), (
            argv,
            code,
            err[-500:],
        )
        if code == 2:
            assert err.strip(), f"{argv}: refused without a word"
            assert snapshot(data_dir) == before, f"{argv}: refused, yet the store changed"


needs_clock = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the fuzzer's clock needs SIGALRM")


@needs_clock
@FUZZ
@given(data=st.data())
def test_every_command_exits_cleanly_on_any_arguments(data, template, argv_words, clock, monkeypatch, capsys):
    run_case(data.draw(command_lines(argv_words), label="argv"), template, monkeypatch, capsys)


@needs_clock
@FUZZ
@given(data=st.data())
def test_a_working_command_with_one_word_spoiled_exits_cleanly(
    data, template, argv_words, clock, monkeypatch, capsys
):
    checkpoint = "ROOT/" + str(next((template / "data" / "checkpoints").rglob("*.npz")).relative_to(template))
    argv = data.draw(spoiled_command_lines(argv_words, checkpoint), label="argv")
    run_case(argv, template, monkeypatch, capsys)


@pytest.mark.parametrize("line", VALID)
def test_the_working_commands_work(line, template, clock, monkeypatch, capsys):
    """The base of the spoiled cases: each does its work on the template store (exit 0)."""
    checkpoint = next((template / "data" / "checkpoints").rglob("*.npz")).relative_to(template)
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        root = Path(tmp) / "case"
        shutil.copytree(template, root)
        argv = (
            line.replace("CHECKPOINT", str(root / checkpoint))
            .replace("GAMES", str(root / "games.jsonl"))
            .split()
        )
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        monkeypatch.chdir(tmp)
        assert main(["--data-dir", str(root / "data"), *argv]) == 0, capsys.readouterr().err
