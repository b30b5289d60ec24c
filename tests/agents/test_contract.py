"""The agent contract, checked on every registered agent (a new agent is covered by registering it)."""

from __future__ import annotations

import json
import pathlib
import zipfile

import numpy as np
import pytest

from agents.base import Agent
from agents.checkpoint import META_KEY, CheckpointError, load_checkpoint
from agents.config import ConfigError, FieldSpec
from agents.registry import agent_names, get_agent_class
from engine import DIRECTIONS, Game, Rules

AGENTS = agent_names()

# Hand-drawn 4x4 boards. ONLY_LEFT: column 0 empty, the rest packed right with no equal neighbours,
# so left is the one legal move.
ONLY_LEFT = [[0, 2, 4, 8], [0, 4, 8, 2], [0, 2, 4, 8], [0, 4, 8, 2]]
MIDGAME = [[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]]
CROWDED = [[2, 4, 2, 4], [4, 8, 16, 2], [2, 32, 64, 4], [128, 256, 2, 0]]
OPENING = [[0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 2, 0]]
BOARDS = [ONLY_LEFT, MIDGAME, CROWDED, OPENING]


def make(name: str, seed: int = 1) -> Agent:
    cls = get_agent_class(name)
    return cls(cls.config_cls(), Rules(), seed=seed)


def game_on(board: list[list[int]]) -> Game:
    return Game(board=np.array(board), seed=0)


@pytest.fixture(params=AGENTS)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_act_is_legal_on_hand_drawn_boards(name: str) -> None:
    agent = make(name)
    for board in BOARDS:
        game = game_on(board)
        move = agent.act(game)
        assert move in game.legal_moves(), (board, move)
    assert agent.act(game_on(ONLY_LEFT)).label == "left"


def test_move_values_only_rate_legal_moves(name: str) -> None:
    agent = make(name)
    for board in BOARDS:
        game = game_on(board)
        try:
            values = agent.move_values(game)
        except NotImplementedError:
            pytest.skip(f"{name} does not rate moves")
        assert values, board
        assert set(values) <= set(game.legal_moves()), (board, values)
        assert all(np.isfinite(v) for v in values.values())
    assert set(agent.move_values(game_on(ONLY_LEFT))) == {DIRECTIONS[1]}


def test_config_defaults_are_valid(name: str) -> None:
    cls = get_agent_class(name)
    config = cls.config_cls()
    for spec in cls.config_cls.specs():
        assert spec.help, f"{name}.{spec.name} has no help text"
        assert spec.check(getattr(config, spec.name)) == getattr(config, spec.name)
    assert cls.config_cls.from_dict(config.to_dict()) == config


def _out_of_range(spec: FieldSpec) -> object | None:
    if spec.choices is not None:
        return "no-such-choice" if spec.kind == "str" else None
    if spec.low is not None:
        bad = spec.low - 1
    elif spec.high is not None:
        bad = spec.high + 1
    else:
        return None
    if spec.kind == "int":
        return int(bad)
    if spec.kind == "float":
        return float(bad)
    if spec.kind == "int_tuple":
        return (int(bad),)
    if spec.kind == "float_tuple":
        return (float(bad),)
    return None


def test_bad_config_value_names_the_field_and_range(name: str) -> None:
    cls = get_agent_class(name)
    checked = 0
    for spec in cls.config_cls.specs():
        bad = _out_of_range(spec)
        if bad is None:
            continue
        with pytest.raises(ConfigError) as err:
            cls.config_cls(**{spec.name: bad})
        assert err.value.field == spec.name
        assert str(err.value).startswith(f"{spec.name}: ")
        if spec.choices is not None:
            assert "one of" in str(err.value)
        else:
            assert "must be in [" in str(err.value)
        checked += 1
    if not cls.config_cls.specs():
        pytest.skip(f"{name} has no settings")
    assert checked, f"{name} has settings but none with a range or choices"


def test_save_load_gives_the_same_moves(name: str, tmp_path: pathlib.Path) -> None:
    agent = make(name, seed=7)
    path = agent.save(tmp_path / "a.npz")
    again = load_checkpoint(path)
    assert type(again) is type(agent)
    assert again.config == agent.config and again.rules == agent.rules
    for board in BOARDS * 2:
        assert agent.act(game_on(board)) == again.act(game_on(board)), board


def test_checkpoint_of_another_agent_is_refused(name: str, tmp_path: pathlib.Path) -> None:
    path = make(name).save(tmp_path / "a.npz")
    other = next(n for n in AGENTS if n != name)
    with pytest.raises(CheckpointError, match=f"checkpoint of agent '{name}', not '{other}'"):
        load_checkpoint(path, expect_agent=other)
    with pytest.raises(ValueError, match=f"'{name}'"):
        get_agent_class(other).load(path)


def test_truncated_checkpoint_is_refused(name: str, tmp_path: pathlib.Path) -> None:
    path = make(name).save(tmp_path / "a.npz")
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"truncated|not an \.npz"):
        load_checkpoint(cut)


def _rewrite(
    path: pathlib.Path,
    out: pathlib.Path,
    meta_change: dict | None = None,
    extra: dict | None = None,
    allow_pickle: bool = False,
) -> None:
    with np.load(path, allow_pickle=False) as npz:
        entries = {k: npz[k] for k in npz.files}
    meta = json.loads(bytes(entries[META_KEY]).decode())
    meta.update(meta_change or {})
    entries[META_KEY] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    entries.update(extra or {})
    with open(out, "wb") as fh:
        np.savez(fh, **entries)


def test_newer_format_version_is_refused(name: str, tmp_path: pathlib.Path) -> None:
    path = make(name).save(tmp_path / "a.npz")
    newer = tmp_path / "newer.npz"
    _rewrite(path, newer, {"version": 99})
    with pytest.raises(CheckpointError, match="version 99, newer"):
        load_checkpoint(newer)


class _Payload:
    """Unpickling this creates a marker file: the proof that a loader ran code from a checkpoint."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[pathlib.Path]]:
        return (pathlib.Path.touch, (self.marker,))


def test_pickle_payload_is_refused_without_running_it(name: str, tmp_path: pathlib.Path) -> None:
    path = make(name).save(tmp_path / "a.npz")
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.npz"
    payload = np.empty(1, dtype=object)
    payload[0] = _Payload(marker)
    _rewrite(path, evil, extra={"weights": payload})
    assert zipfile.is_zipfile(evil)

    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(evil)
    assert not marker.exists()

    # The payload is real: a loader that allows pickles would have run it.
    with np.load(evil, allow_pickle=True) as npz:
        npz["weights"]
    assert marker.exists()


ABBREVIATIONS = {"lr", "lam", "tc", "eps", "nn", "s4", "tt", "puct", "val", "frac", "prob", "envs", "grad"}


@pytest.mark.parametrize("name", agent_names())
def test_every_knob_has_a_label_a_newcomer_reads(name: str) -> None:
    for spec in get_agent_class(name).config_cls.specs():
        words = set(spec.label.lower().replace(":", " ").split())
        assert spec.label and spec.label[0].isupper(), (name, spec.name, spec.label)
        assert not words & ABBREVIATIONS, (name, spec.name, spec.label)


def test_default_labels_spell_out_the_abbreviations() -> None:
    from agents.config import default_label

    assert default_label("lr") == "Learning rate"
    assert default_label("n_step") == "N-step"
    assert default_label("tc") == "Temporal coherence"
    assert default_label("eps_decay") == "Exploration decay"
    assert default_label("lam") == "Trace decay λ"
    assert default_label("c_puct") == "Exploration constant (PUCT)"
