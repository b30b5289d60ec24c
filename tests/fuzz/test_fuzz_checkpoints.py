"""Fuzz: mutated checkpoints at the loading door (``load_checkpoint``, ``eval --checkpoint``, ``train --resume``).

Every case starts from a real, small checkpoint of one of several agents (an n-tuple network on the
4x4 tuple set, a dqn with its optimiser and replay buffer, a td-afterstate learner, an MCTS network,
expectimax, greedy), mutates its metadata field by field (a key deleted, its value replaced by one of
another type, a huge or negative number, NaN, infinity, text, a deep structure: down to the fields
inside ``state``, ``config``, ``rules`` and ``counters``) and its arrays (another dtype, shape, NaN,
infinity, absurd values, dropped, one added), or the archive itself (metadata that is not text, or
nested 100,000 deep), and writes the file.

The property: ``load_checkpoint`` returns an agent that picks a legal move on a board of its rules,
or raises CheckpointError with one line; never another exception, never a hang. Through the CLI
(a sample of cases, slower): ``eval --checkpoint`` exits 0 or 2 with no traceback.
"""

from __future__ import annotations

import json
import signal
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.base import Budget
from agents.checkpoint import META_KEY, CheckpointError, load_checkpoint
from agents.registry import create_agent
from engine import Game
from studio.cli import main
from tests.fuzz.common import FUZZ, count

#: Small agents whose checkpoints the cases mutate: config, and training steps before saving (so the
#: optimiser state, replay buffer, TC sums and generator states are all in the file).
AGENTS: dict[str, tuple[dict[str, Any], int]] = {
    "ntuple": ({"layout": "4x4", "threads": 2}, 2000),
    "dqn": (
        {"hidden": [8, 8], "replay_capacity": 256, "batch_size": 16, "learning_starts": 32, "envs": 2},
        120,
    ),
    "td-afterstate": ({"hidden": [8], "states_per_round": 64, "batch_size": 16, "envs": 2}, 0),
    "mcts": ({"filters": 4, "dense": 8, "eval_simulations": 2, "simulations": 2}, 0),
    "expectimax": ({"depth": 1}, 0),
    "greedy": ({}, 0),
}
#: Played through ``eval`` (a whole game each): the quick ones.
CLI_AGENTS = ("ntuple", "dqn", "expectimax", "greedy")
#: Seconds a case may take before it counts as a hang.
CLOCK_S = 20.0

DEEP = "__deep__"
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**64 - 1, -(2**63), -(2**64), 10**30]),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.5, -0.0, 1e308, -1e-300]),
    st.text(max_size=6),
    st.sampled_from(["12", "-1", "18446744073709551616", "PCG64", "MT19937", "sparse", "dense", "4x6", DEEP]),
    st.lists(st.integers(-2, 2**64), max_size=3),
    st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, max_size=2), max_leaves=4),
    st.dictionaries(
        st.sampled_from(["state", "inc", "lr", "params", "a"]), st.integers(-1, 2**70), max_size=2
    ),
)
DTYPES = ["float64", "float16", "int8", "uint64", "bool", ">f4", "<U3", "complex64", "V4", "object"]


# ------------------------------------------------------------------------------------------ set-up


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz-checkpoints")
    out = {}
    for name, (config, steps) in AGENTS.items():
        agent = create_agent(name, config, seed=5)
        if steps:
            for _ in agent.train(Budget(steps=steps, seconds=20)):
                pass
        out[name] = agent.save(root / f"{name}.npz")
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-checkpoint-cases")


def read_entries(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(bytes(arrays.pop(META_KEY)).decode())
    return meta, arrays


def write_entries(path: Path, meta_text: str | np.ndarray, arrays: dict[str, np.ndarray]) -> None:
    """Write an archive as checkpoints are written (stored members); the metadata as given."""
    raw = meta_text if isinstance(meta_text, np.ndarray) else np.frombuffer(meta_text.encode(), np.uint8)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for key, arr in {**arrays, META_KEY: raw}.items():
            with zf.open(f"{key}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=True)


def meta_text(meta: Any) -> str:
    """JSON as Python writes it (NaN / Infinity included), with :data:`DEEP` strings made 100,000 deep."""
    deep = "[" * 100_000 + "]" * 100_000
    return json.dumps(meta).replace(json.dumps(DEEP), deep)


# -------------------------------------------------------------------------------------- mutations


def mutate_meta(data: st.DataObject, meta: dict[str, Any]) -> None:
    """Walk down from the top to a key (a random depth), then delete it or replace its value."""
    node: Any = meta
    while isinstance(node, (dict, list)):
        keys: list[Any] = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return
        key = data.draw(st.sampled_from(keys), label="key")
        child = node[key]
        if isinstance(child, (dict, list)) and child and data.draw(st.integers(0, 3), label="deeper"):
            node = child
            continue
        if isinstance(node, dict) and data.draw(st.integers(0, 4), label="delete") == 0:
            del node[key]
        else:
            node[key] = data.draw(VALUES, label="value")
        return


def mutate_array(data: st.DataObject, arrays: dict[str, np.ndarray]) -> None:
    how = data.draw(st.sampled_from(["dtype", "shape", "nan", "inf", "huge", "negative", "drop", "add"]))
    if how == "add" or not arrays:
        arrays[data.draw(st.sampled_from(["extra", "weights", "index", "net/x"]))] = np.zeros(3)
        return
    key = data.draw(st.sampled_from(sorted(arrays)), label="array")
    arr = arrays[key]
    numeric = arr if arr.dtype.kind in "biuf" else np.zeros(arr.shape)  # an earlier mutation's text
    if how == "drop":
        del arrays[key]
    elif how == "dtype":
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        if dtype in ("object", "V4"):
            new = np.empty(numeric.shape, dtype=dtype)
            new[...] = 0 if dtype == "object" else b"\0\0\0\0"
            arrays[key] = new
        else:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arrays[key] = numeric.astype(dtype)
    elif how == "shape":
        shape = data.draw(st.sampled_from(["flat", "axis", "short", "empty", "scalar"]), label="shape")
        arrays[key] = {
            "flat": lambda: arr.reshape(-1),
            "axis": lambda: arr[None],
            "short": lambda: arr.reshape(-1)[:-1],
            "empty": lambda: arr.reshape(-1)[:0],
            "scalar": lambda: np.asarray(arr.reshape(-1)[0] if arr.size else 0),
        }[shape]()
    else:
        value = {"nan": np.nan, "inf": np.inf, "huge": 1e30, "negative": -7}[how]
        kind = numeric.dtype.kind
        new = numeric.astype(
            np.float64 if kind != "f" and how != "negative" else np.int64 if kind in "bu" else numeric.dtype
        )
        if new.size:
            new.reshape(-1)[data.draw(st.integers(0, new.size - 1), label="at")] = value
        arrays[key] = new


def mutated(data: st.DataObject, bases: dict[str, Path], work: Path, names: tuple[str, ...]) -> Path:
    name = data.draw(st.sampled_from(names), label="agent")
    meta, arrays = read_entries(bases[name])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        kind = data.draw(st.integers(0, 19), label="kind")
        if kind <= 12:
            mutate_meta(data, meta)
        elif kind <= 18:
            mutate_array(data, arrays)
        else:  # the metadata itself: not an object, or not text
            meta = data.draw(st.sampled_from([[], "x", 3, None, [meta], {"format": meta}]), label="meta")
    raw: str | np.ndarray = meta_text(meta)
    if data.draw(st.integers(0, 30), label="raw") == 0:
        raw = np.frombuffer(raw.encode(), np.uint8).astype(np.float32)
    path = work / "case.npz"
    write_entries(path, raw, arrays)
    return path


# ---------------------------------------------------------------------------------------- property


class Hung(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hung(f"a case ran past {CLOCK_S} s")


@pytest.fixture
def clock() -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_one_line(error: BaseException) -> None:
    text = str(error)
    assert text and "\n" not in text and len(text) <= 400, repr(text)


def plays_or_refuses(path: Path) -> None:
    signal.setitimer(signal.ITIMER_REAL, CLOCK_S)
    try:
        try:
            agent = load_checkpoint(path)
        except CheckpointError as e:
            check_one_line(e)
            return
        for seed in (1, 2):
            game = Game(seed=seed, rules=agent.rules)
            if not game.game_over:
                assert agent.act(game) in game.legal_moves()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@FUZZ
@given(data=st.data())
def test_a_mutated_checkpoint_loads_and_plays_or_is_refused_in_one_line(
    data: st.DataObject, bases: dict[str, Path], work: Path, clock: None
) -> None:
    count("checkpoint meta")
    plays_or_refuses(mutated(data, bases, work, tuple(AGENTS)))


@settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 4))
@given(data=st.data())
def test_eval_of_a_mutated_checkpoint_exits_0_or_2_without_a_traceback(
    data: st.DataObject,
    bases: dict[str, Path],
    work: Path,
    clock: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    count("checkpoint eval")
    path = mutated(data, bases, work, CLI_AGENTS)
    capsys.readouterr()
    signal.setitimer(signal.ITIMER_REAL, CLOCK_S * 2)
    try:
        rc = main(
            ["--data-dir", str(work / "data"), "eval", "--checkpoint", str(path), "--games", "1", "--no-log"]
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    err = capsys.readouterr().err
    assert rc in (0, 2) and "Traceback" not in err, err
    if rc == 2:
        assert len([line for line in err.splitlines() if "error:" in line]) == 1, err


# ------------------------------------------------------------------------------------------ resume


def _last_checkpoint(data_dir: Path) -> Path:
    return max((data_dir / "checkpoints").rglob("*.npz"), key=lambda p: p.stat().st_mtime)


def _run_state(data_dir: Path) -> tuple[Any, ...]:
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        run = store.get_run(1)
        return run.status, run.episodes, run.steps, len(store.run_metrics(1)["step"])


@pytest.mark.parametrize(
    "damage",
    ["deep metadata", "nan weights", "counters", "rng state"],
)
def test_resume_from_a_mutated_checkpoint_is_refused_in_one_line_and_the_run_stays(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    count("checkpoint resume")
    d = tmp_path / "data"
    assert (
        main(["--data-dir", str(d), "train", "--agent", "ntuple", "--layout", "4x4", "--steps", "800"]) == 0
    )
    path = _last_checkpoint(d)
    meta, arrays = read_entries(path)
    if damage == "deep metadata":
        meta["state"]["stages"] = DEEP
    elif damage == "nan weights":
        arrays["weights"][: arrays["weights"].size // 2] = np.nan
    elif damage == "counters":
        meta["counters"]["steps"] = -(2**70)
    else:
        meta["state"]["rng_state"] = str(2**64)
    write_entries(path, meta_text(meta), arrays)
    before = _run_state(d)
    capsys.readouterr()
    rc = main(["--data-dir", str(d), "train", "--resume", "1", "--steps", "100"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert f"run 1 cannot resume: {path.name}" in err and len(err.strip().splitlines()) == 1, err
    assert _run_state(d) == before
