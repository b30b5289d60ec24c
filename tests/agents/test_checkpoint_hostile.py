"""Hostile checkpoints (issue #17): every crafted file is one CheckpointError line, never a traceback,
never a hang, never a huge allocation; a diverged network is never saved, loaded or resumed; and play
on non-finite values still picks a legal move (the jitted n-tuple paths too)."""

from __future__ import annotations

import io
import json
import struct
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.base import Agent, Budget, MetricEvent
from agents.checkpoint import META_KEY, CheckpointError, NonFiniteWeights, load_checkpoint
from agents.registry import create_agent
from engine import Game
from engine.npzcheck import NpzSizeError, check_npz_sizes
from tests.agents.fake_learner import FakeLearner

NTUPLE = {"layout": "4x4", "threads": 2}
DQN = {"hidden": [8, 8], "replay_capacity": 256, "batch_size": 16, "learning_starts": 32, "envs": 2}


# ------------------------------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small real checkpoints: an n-tuple network (sparse, TC sums, two workers' streams) and a dqn
    (network, target, Adam state, replay buffer, numpy generator)."""
    root = tmp_path_factory.mktemp("hostile")
    nt = create_agent("ntuple", NTUPLE, seed=3)
    for _ in nt.train(Budget(steps=1500)):
        pass
    dqn = create_agent("dqn", DQN, seed=3)
    for _ in dqn.train(Budget(steps=80)):
        pass
    return {"ntuple": nt.save(root / "ntuple.npz"), "dqn": dqn.save(root / "dqn.npz")}


def entries(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return json.loads(bytes(arrays.pop(META_KEY)).decode()), arrays


def write(path: Path, meta: Any, arrays: dict[str, np.ndarray], *, text: str | None = None) -> Path:
    raw = (text if text is not None else json.dumps(meta)).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for key, arr in {**arrays, META_KEY: np.frombuffer(raw, np.uint8)}.items():
            with zf.open(f"{key}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)
    return path


def crafted(files: dict[str, Path], tmp_path: Path, agent: str, change: Callable[[dict, dict], Any]) -> Path:
    meta, arrays = entries(files[agent])
    out = change(meta, arrays)
    return write(tmp_path / "crafted.npz", out if out is not None else meta, arrays)


def refused(path: Path, match: str) -> CheckpointError:
    with pytest.raises(CheckpointError, match=match) as err:
        load_checkpoint(path)
    text = str(err.value)
    assert "\n" not in text and len(text) <= 400, text
    return err.value


# ----------------------------------------------------------------------------------- the metadata


@pytest.mark.parametrize(
    ("agent", "change", "match"),
    [
        ("ntuple", lambda m, a: m["counters"].update(games=3), "counter 'games'"),
        ("ntuple", lambda m, a: m["counters"].update(steps="12"), "counter steps is '12'"),
        ("ntuple", lambda m, a: m["counters"].update(episodes=-1), "counter episodes is -1"),
        (
            "ntuple",
            lambda m, a: m["counters"].update(updates=2**63),
            "counter updates is 9223372036854775808",
        ),
        ("dqn", lambda m, a: m["counters"].update(seconds=True), "counter seconds is True"),
        ("ntuple", lambda m, a: m.update(state=[1, 2]), "its state is a list"),
        ("dqn", lambda m, a: m.update(state=[]), "its state is a list"),
        ("ntuple", lambda m, a: m.update(seed="7"), "seed '7'"),
        ("dqn", lambda m, a: m.update(seed=2**64), "seed 18446744073709551616"),
        ("ntuple", lambda m, a: m.update(seed=-3), "seed -3"),
        ("ntuple", lambda m, a: m.update(config=["layout"]), "its config is a list"),
        ("dqn", lambda m, a: m.update(rules="4x4"), "its rules is a str"),
        ("ntuple", lambda m, a: m.update(version="1"), "version '1'"),
        ("ntuple", lambda m, a: m.update(agent=["ntuple"]), "names no agent"),
        ("dqn", lambda m, a: m["config"].update(lr=10**400), "settings this version cannot use"),
        ("ntuple", lambda m, a: m["state"].update(rng_state="-1"), "rng_state is '-1'"),
        ("ntuple", lambda m, a: m["state"].update(rng_state=str(2**64)), "rng_state"),
        ("ntuple", lambda m, a: m["state"].update(worker_rng_states=5), "worker_rng_states"),
        ("ntuple", lambda m, a: m["state"].update(worker_rng_states=[["1", "x"]]), r"worker_rng_states\[1\]"),
        ("ntuple", lambda m, a: m["state"].update(truncated_games=2**70), "truncated_games"),
        ("ntuple", lambda m, a: m["state"].update(live_stages=True), "live_stages"),
        ("ntuple", lambda m, a: m["state"].update(storage=["sparse"]), "storage"),
        ("dqn", lambda m, a: m["state"].update(optimizers=[]), "optimizers is a list"),
        ("dqn", lambda m, a: m["state"].update(extra=3), "extra is a int"),
        ("dqn", lambda m, a: m["state"]["extra"].update(since_update=-5), "since_update is -5"),
        ("dqn", lambda m, a: m["state"]["optimizers"]["opt/"]["param_groups"][0].update(lr="fast"), "'lr'"),
        (
            "dqn",
            lambda m, a: m["state"]["optimizers"]["opt/"]["param_groups"][0].update(betas=[0.9]),
            "'betas'",
        ),
        (
            "dqn",
            lambda m, a: m["state"]["optimizers"]["opt/"]["param_groups"][0].update(capturable=True),
            "capturable",
        ),
        (
            "dqn",
            lambda m, a: m["state"]["optimizers"]["opt/"]["param_groups"][0].update(params=[0] * 6),
            "out of order",
        ),
        ("dqn", lambda m, a: m["state"]["optimizers"]["opt/"].update(scalars={"99": {"step": 1}}), "scalars"),
        # numpy generator states: out of range, of another generator, and an even increment (a PCG64
        # stream that sticks at 0: Generator.integers then loops forever)
        ("dqn", lambda m, a: m["state"]["numpy_rng"]["state"].update(state=-1), "PCG64"),
        ("dqn", lambda m, a: m["state"]["numpy_rng"]["state"].update(inc=2**200), "PCG64"),
        ("dqn", lambda m, a: m["state"]["numpy_rng"].update(has_uint32=7), "PCG64"),
        ("dqn", lambda m, a: m["state"]["numpy_rng"].update(uinteger="x"), "PCG64"),
        ("dqn", lambda m, a: m["state"]["numpy_rng"].update(state={"state": 0, "inc": 0}), "PCG64"),
    ],
)
def test_crafted_metadata_is_one_line_of_refusal(
    files: dict[str, Path], tmp_path: Path, agent: str, change: Callable[[dict, dict], Any], match: str
) -> None:
    refused(crafted(files, tmp_path, agent, change), match)


def test_metadata_nested_100k_deep_is_refused_not_a_recursion_error(
    files: dict[str, Path], tmp_path: Path
) -> None:
    meta, arrays = entries(files["ntuple"])
    text = json.dumps(meta).replace('"stages": []', '"stages": ' + "[" * 100_000 + "]" * 100_000)
    refused(write(tmp_path / "deep.npz", None, arrays, text=text), "nested too deeply")
    # deep, but within what json reads: still refused (code further in recurses over it)
    text = json.dumps(meta).replace('"stages": []', '"stages": ' + "[" * 500 + "]" * 500)
    refused(write(tmp_path / "deep.npz", None, arrays, text=text), "nests deeper than")


def test_nan_and_infinity_in_metadata_are_refused(files: dict[str, Path], tmp_path: Path) -> None:
    meta, arrays = entries(files["dqn"])
    text = json.dumps(meta).replace('"seconds": ', '"seconds": NaN, "x": ', 1)
    refused(write(tmp_path / "nan.npz", None, arrays, text=text), "NaN is not a number")


def test_a_file_name_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "two\nlines.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    refused(bad, "not a 2048 Studio checkpoint")


# --------------------------------------------------------------------------------------- the arrays


@pytest.mark.parametrize(
    ("agent", "change", "match"),
    [
        # a big-endian network: torch.from_numpy refused it with a TypeError
        (
            "dqn",
            lambda m, a: a.update({k: v.astype(">f4") for k, v in a.items() if k.startswith("net/")}),
            None,
        ),
        (
            "dqn",
            lambda m, a: a.update({"net/net.1.weight": a["net/net.1.weight"].astype("<U4")}),
            "numbers only",
        ),
        (
            "dqn",
            lambda m, a: a.update({"net/net.1.bias": a["net/net.1.bias"].astype(np.complex64)}),
            "numbers only",
        ),
        (
            "dqn",
            lambda m, a: a.update({"net/net.1.bias": np.full(a["net/net.1.bias"].shape, 1e300)}),
            "float32",
        ),
        (
            "dqn",
            lambda m, a: a.update({"buffer/actions": np.full_like(a["buffer/actions"], 9)}),
            "buffer/actions",
        ),
        (
            "dqn",
            lambda m, a: a.update({"buffer/states": a["buffer/states"][:, :2]}),
            "buffer/states has shape",
        ),
        ("dqn", lambda m, a: a.update({"opt/state/0/exp_avg": np.zeros(3, np.float32)}), "exp_avg"),
        (
            "dqn",
            lambda m, a: a.update({"opt/state/77/exp_avg": np.zeros(3, np.float32)}),
            "names no parameter",
        ),
        ("dqn", lambda m, a: a.update({"opt/state/x": np.zeros(3, np.float32)}), "names no parameter"),
        ("dqn", lambda m, a: a.update({"opt/state/0/step": np.array(-4.0, np.float32)}), "step count"),
        ("ntuple", lambda m, a: a.update(index=a["index"].astype(np.float64) + 0.5), "index has type"),
        ("ntuple", lambda m, a: a.update(index=a["index"].astype(np.int64) - 10**6), "index holds values"),
        ("ntuple", lambda m, a: a.update(weights=a["weights"].astype("<U8")), "numbers only"),
        ("ntuple", lambda m, a: a.update(weights=np.full(a["weights"].shape, 1e300)), "float32 range"),
    ],
)
def test_crafted_arrays_are_refused_or_read_right(
    files: dict[str, Path], tmp_path: Path, agent: str, change: Callable[[dict, dict], Any], match: str | None
) -> None:
    path = crafted(files, tmp_path, agent, change)
    if match is not None:
        refused(path, match)
        return
    loaded = load_checkpoint(path)  # byte order is the file's business: the same network either way
    original = load_checkpoint(files[agent])
    game = Game(seed=4)
    assert loaded.move_values(game) == original.move_values(game)


def test_an_entry_that_is_not_an_array_is_refused(files: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "raw.npz"
    path.write_bytes(files["ntuple"].read_bytes())
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("notes.txt", b"hello")
    refused(path, "'notes.txt' is not an array")


# ------------------------------------------------------------------------------------- inflation


def test_an_npy_header_declaring_a_huge_shape_is_refused_before_any_allocation(
    files: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "huge.npz"
    path.write_bytes(files["ntuple"].read_bytes())
    member = io.BytesIO()  # 2**45 float32 declared (128 TiB), 16 bytes held
    np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": (2**45,)})
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("huge.npy", member.getvalue() + bytes(16))
    err = refused(path, r"declares shape \(35184372088832,\)")
    assert "huge.npy" in str(err)


def test_a_compressed_member_that_inflates_past_the_bound_is_refused(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agents.checkpoint.MAX_INFLATION_BYTES", 1 << 20, raising=False)
    path = tmp_path / "bomb.npz"
    path.write_bytes(files["ntuple"].read_bytes())
    # 8 MB of zeros in a few kB
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf, zf.open("bomb.npy", "w") as member:
        np.lib.format.write_array(member, np.zeros(8 << 20, np.uint8))
    assert path.stat().st_size < 200_000
    refused(path, "past .* bytes once decompressed")


def test_metadata_past_its_bound_is_refused_unread(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agents.checkpoint.MAX_META_BYTES", 4096, raising=False)
    path = crafted(files, tmp_path, "ntuple", lambda m, a: m.update(created="x" * 5000))
    refused(path, "bytes of metadata")


def _patch_method(path: Path, method: int) -> None:
    """Set every member's compression method field (local headers and central directory)."""
    data = bytearray(path.read_bytes())
    for sig, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = data.find(sig)
        while at >= 0:
            data[at + offset : at + offset + 2] = struct.pack("<H", method)
            at = data.find(sig, at + 4)
    path.write_bytes(bytes(data))


def test_a_member_in_a_compression_zipfile_cannot_read_is_refused(
    files: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "aes.npz"
    path.write_bytes(files["ntuple"].read_bytes())
    _patch_method(path, 99)  # AES: zipfile raises NotImplementedError deep inside np.load
    refused(path, "compression")


def test_check_npz_sizes_reports_members_and_refuses_lies(files: dict[str, Path], tmp_path: Path) -> None:
    members = check_npz_sizes(files["ntuple"], 1 << 30)
    assert members["weights"].dtype == np.float32 and members[META_KEY].shape is not None
    with open(files["ntuple"], "rb") as fh:
        fh.seek(3)
        assert check_npz_sizes(fh, 1 << 30).keys() == members.keys()
        assert fh.tell() == 3
    with pytest.raises(NpzSizeError, match="past 1,000 bytes"):
        check_npz_sizes(files["ntuple"], 1000)
    with pytest.raises(NpzSizeError, match="more than the 2 allowed"):
        check_npz_sizes(files["ntuple"], 1 << 30, max_members=2)


# ------------------------------------------------------------------------------ non-finite weights


def _nan_ntuple(files: dict[str, Path], tmp_path: Path) -> Path:
    def poison(m: dict, a: dict) -> None:
        a["weights"] = np.full_like(a["weights"], np.nan)

    return crafted(files, tmp_path, "ntuple", poison)


def test_a_checkpoint_with_non_finite_weights_is_refused_as_diverged(
    files: dict[str, Path], tmp_path: Path
) -> None:
    path = _nan_ntuple(files, tmp_path)
    err = refused(path, r"crafted.npz holds non-finite weights \(NaN or infinity in 'weights'\).*diverged")
    assert isinstance(err, NonFiniteWeights)
    # tools may still read it on purpose
    assert load_checkpoint(path, allow_nonfinite=True).name == "ntuple"
    inf = crafted(files, tmp_path, "dqn", lambda m, a: a["opt/state/1/exp_avg_sq"].__setitem__(0, np.inf))
    refused(inf, "non-finite weights")


def test_eval_and_the_scripts_refuse_a_diverged_checkpoint_in_one_line(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from studio.cli import main

    path = _nan_ntuple(files, tmp_path)
    rc = main(
        ["--data-dir", str(tmp_path / "d"), "eval", "--checkpoint", str(path), "--games", "1", "--no-log"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "non-finite weights" in err and len(err.strip().splitlines()) == 1, err

    for play in (
        ["--fast"],
        ["--set", "search_depth=2"],
    ):  # what scripts/eval_ntuple.py, eval_checkpoint.py did
        argv = ["--data-dir", str(tmp_path / "d"), "eval", "--checkpoint", str(path), "--games", "1", *play]
        assert main(argv) == 2
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    monkeypatch.syspath_prepend(str(scripts))
    import first_moves

    monkeypatch.setattr(sys, "argv", ["first_moves.py", "--checkpoint", str(path), "--games", "2"])
    assert first_moves.main() == 2
    err = capsys.readouterr().err
    assert (
        err.count("non-finite weights") == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 3
    )


def _ntuple_with(weights: float, **config: Any) -> Agent:
    agent = create_agent("ntuple", {"layout": "4x4", **config}, seed=1)
    agent.weights[:] = weights  # type: ignore[attr-defined]
    return agent


@pytest.mark.parametrize(
    ("value", "depth"), [(np.nan, 1), (np.inf, 1), (-np.inf, 1), (np.nan, 2), (np.inf, 2)]
)
def test_jitted_play_on_non_finite_values_picks_legal_moves_as_act_does(value: float, depth: int) -> None:
    agent = _ntuple_with(value, search_depth=depth)
    fast = agent.play_fast(2, seed=30)  # type: ignore[attr-defined]
    for i in range(2):
        game = Game(seed=30 + i)
        while not game.game_over:
            game.step(agent.act(game))
        assert (int(fast["score"][i]), int(fast["moves"][i])) == (game.score, game.moves)
        assert game.moves > 50  # a whole game, not one stopped at its first move


def test_training_on_nan_weights_plays_on_and_reports_the_divergence() -> None:
    agent = _ntuple_with(np.nan)
    events = list(agent.train(Budget(steps=3000, seconds=5)))
    assert agent.counters.steps == 3000  # moves were made: no 0-move games
    assert any(np.isnan(e.metrics.get("td_error", 0.0)) for e in events)


def test_td_afterstate_with_a_diverged_network_still_picks_a_legal_move() -> None:
    import torch

    agent = create_agent("td-afterstate", {"hidden": [8]}, seed=1)
    with torch.no_grad():
        for p in agent.net.parameters():  # type: ignore[attr-defined]
            p.fill_(float("nan"))
    game = Game(seed=2)
    assert agent.act(game) in game.legal_moves()


# ------------------------------------------------------------------------------------------- runs


class Silent(FakeLearner):
    """A fake learner whose weights turn NaN at episode 3 while every metric it reports stays finite."""

    name = "silent-diverger"

    def train(self, budget: Budget, control: Any = None, context: Any = None) -> Iterator[MetricEvent]:
        for event in super().train(budget, control, context):
            if self.counters.episodes >= 3:
                self.weights[:] = np.nan
            yield event


@pytest.fixture
def silent_diverger(monkeypatch: pytest.MonkeyPatch) -> type[Silent]:
    from agents import registry

    monkeypatch.setattr(
        registry, "_default", registry.default_registry().with_agents({Silent.name: f"{__name__}:Silent"})
    )
    return Silent


def test_a_run_never_saves_non_finite_weights_and_keeps_the_last_good_checkpoint(
    silent_diverger: type[Silent], data_dir: Path
) -> None:
    from agents.runner import Diverged, run_training
    from engine import Rules
    from engine.store import GameStore
    from tests.agents.fake_learner import FakeConfig

    with GameStore.open(data_dir) as store:
        agent = silent_diverger(FakeConfig(), Rules(rows=2, cols=2), seed=1)
        run = run_training(agent, Budget(episodes=10), store, checkpoint_every_s=1e-9)
        with pytest.raises(
            Diverged, match=r"diverged: silent-diverger's 'weights' holds NaN or infinite values"
        ):
            list(run)
        summary = store.get_run(run.run_id)
        assert summary.status == "failed" and "\n" not in (summary.error or "")
        assert [c.episode for c in store.run_checkpoints(run.run_id)] == [1, 2]
        assert load_checkpoint(store.last_checkpoint(run.run_id)).counters.episodes == 2


def test_resume_from_a_diverged_checkpoint_is_refused_and_the_run_stays(
    files: dict[str, Path], data_dir: Path
) -> None:
    from agents.runner import IncompatibleCheckpoint, resume_run, run_training
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        run = run_training(load_checkpoint(files["ntuple"]), Budget(steps=500), store)
        assert run.run_to_end() == "finished"
        path = store.last_checkpoint(run.run_id)
        meta, arrays = entries(path)
        arrays["weights"][::2] = np.nan
        write(path, meta, arrays)
        before = store.get_run(run.run_id)
        with pytest.raises(IncompatibleCheckpoint, match=r"cannot resume: .*holds non-finite weights"):
            resume_run(run.run_id, store, Budget(steps=100))
        after = store.get_run(run.run_id)
        assert (after.status, after.steps, after.episodes) == (before.status, before.steps, before.episodes)
