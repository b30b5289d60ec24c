"""The shared torch pieces (agents.nn): encoders, boards, replay buffer, schedules, networks, masking, state."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.nn import state as nn_state
from agents.nn.encoders import make_encoder
from agents.nn.masking import masked_argmax, masked_log_softmax, masked_max, masked_softmax, sample_from_probs
from agents.nn.networks import NETWORKS, build_network
from agents.nn.replay import ReplayBuffer
from agents.nn.schedules import Schedule
from engine import legal_mask, slide, to_exponents
from engine.boards import augment_batch, count_tiles, legal_masks, symmetries

#: Every tile from empty to 32768, row-major: exponents 0..15.
LADDER = np.array([[0, 2, 4, 8], [16, 32, 64, 128], [256, 512, 1024, 2048], [4096, 8192, 16384, 32768]])
#: Only LEFT is legal: the first column is empty, the rest is full with no equal neighbours.
ONLY_LEFT = np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]])


pytest_plugins = ("tests.agents.torch_fixtures",)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def random_exps(rng: np.random.Generator, n: int, rows: int = 4, cols: int = 4, top: int = 6) -> np.ndarray:
    exps = rng.integers(0, top, size=(n, rows, cols)).astype(np.uint8)
    exps[rng.random((n, rows, cols)) < 0.3] = 0
    return exps


# ---------------------------------------------------------------------------------------------- encoders


def test_log2_encoder_is_seed000_vector():
    enc = make_encoder("log2")
    x = enc.encode(to_exponents(LADDER))
    assert x.shape == (1, 1, 4, 4) and x.dtype == np.float32
    # Flattened row-major, as the notebook's get_normalized_flattened_board: log2(value), 0 for empty.
    assert x.reshape(-1).tolist() == [float(k) for k in range(16)]


def test_log2_norm_encoder_is_seed001_transform():
    x = make_encoder("log2_norm").encode(to_exponents(np.array([[0, 2], [2048, 4]])))
    np.testing.assert_allclose(x[0, 0], [[-0.25, 1 / 11 - 0.25], [0.75, 2 / 11 - 0.25]], rtol=1e-6)


def test_onehot_planes_mark_each_exponent():
    enc = make_encoder("onehot", planes=18)
    x = enc.encode(to_exponents(LADDER))
    assert x.shape == (1, 18, 4, 4)
    for r in range(4):
        for c in range(4):
            e = 4 * r + c
            assert x[0, e, r, c] == 1.0
            assert x[0, :, r, c].sum() == 1.0
    assert x[0, 0].sum() == 1.0  # one empty cell
    assert x[0, 16:].sum() == 0.0  # nothing that large


def test_onehot_saturates_in_the_last_plane_and_any_shape():
    enc = make_encoder("onehot", planes=4)
    exps = np.array([[[0, 3, 9]], [[1, 2, 4]]], dtype=np.uint8)  # (2, 1, 3): a 1 x 3 board
    x = enc.encode(exps)
    assert x.shape == (2, 4, 1, 3) == (2, *enc.shape(1, 3))
    assert x[0, 3, 0, 2] == 1.0 and x[1, 3, 0, 2] == 1.0  # 9 and 4 land in plane 3
    assert x[0, 3, 0, 1] == 1.0  # 3 is plane 3 too
    with pytest.raises(ValueError, match="encoder"):
        make_encoder("bogus")


# ------------------------------------------------------------------------------------------------ boards


def test_legal_masks_hand_drawn():
    boards = to_exponents(ONLY_LEFT)[None]
    assert legal_masks(boards).tolist() == [[False, True, False, False]]
    full = to_exponents(np.array([[2, 4], [4, 2]]))[None]
    assert legal_masks(full).tolist() == [[False, False, False, False]]
    pair = to_exponents(np.array([[2, 2], [4, 8]]))[None]
    assert legal_masks(pair).tolist() == [[False, True, False, True]]


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 2), (1, 4)])
def test_legal_masks_match_engine(shape):
    rng = np.random.default_rng(1)
    exps = random_exps(rng, 300, *shape, top=4)
    values = np.where(exps == 0, 0, 2 ** exps.astype(np.int64))
    expected = np.stack([legal_mask(v) for v in values])
    np.testing.assert_array_equal(legal_masks(exps), expected)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
def test_symmetries_commute_with_moves(shape):
    syms = symmetries(*shape)
    assert len(syms) == (8 if shape[0] == shape[1] else 4)
    assert syms[0].action_map == (0, 1, 2, 3)
    rng = np.random.default_rng(2)
    for exps in random_exps(rng, 20, *shape, top=4):
        values = np.where(exps == 0, 0, 2 ** exps.astype(np.int64))
        for sym in syms:
            moved = sym.apply(values[None])[0]
            for a in range(4):
                after, reward = slide(values, a)
                after_t, reward_t = slide(moved, sym.action_map[a])
                np.testing.assert_array_equal(after_t, sym.apply(after[None])[0])
                assert reward_t == reward
            mask = legal_masks(exps[None])
            np.testing.assert_array_equal(sym.apply_masks(mask), legal_masks(sym.apply(exps[None])))


def test_augment_batch_keeps_boards_moves_and_masks_consistent():
    rng = np.random.default_rng(3)
    exps = random_exps(rng, 64)
    masks = legal_masks(exps)
    moves = np.array([int(np.flatnonzero(m)[0]) if m.any() else 0 for m in masks])
    a_exps, a_moves, a_masks = augment_batch(exps, moves, masks, rng, symmetries(4, 4))
    assert a_masks is not None
    np.testing.assert_array_equal(a_masks, legal_masks(a_exps))
    legal = masks.any(axis=1)
    assert a_masks[np.arange(64), a_moves][legal].all()
    np.testing.assert_array_equal(count_tiles(a_exps), count_tiles(exps))


# ------------------------------------------------------------------------------------------------ buffer


def test_buffer_wraps_around_and_keeps_the_newest():
    buf = ReplayBuffer(5, (2, 2))
    for i in range(7):
        s = np.full((2, 2), i, np.uint8)
        buf.push(s, i % 4, float(i), s + 1, i == 6, np.array([True, False, True, False]))
    assert len(buf) == 5 and buf.position == 2
    assert sorted(buf.rewards.tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert buf.rewards.tolist() == [5.0, 6.0, 2.0, 3.0, 4.0]  # slots 0, 1 overwritten by 5, 6
    arrays = buf.get_arrays()
    assert arrays["buffer/rewards"].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]  # oldest first
    restored = ReplayBuffer(5, (2, 2))
    restored.set_arrays(arrays)
    assert restored.rewards[: len(restored)].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert restored.position == 0 and len(restored) == 5


def test_push_batch_equals_pushes_even_past_capacity():
    rng = np.random.default_rng(4)
    n = 13
    s, ns = random_exps(rng, n, 2, 3), random_exps(rng, n, 2, 3)
    a, r, d = rng.integers(0, 4, n), rng.random(n).astype(np.float32), rng.random(n) < 0.5
    m = rng.random((n, 4)) < 0.5
    one, many = ReplayBuffer(4, (2, 3)), ReplayBuffer(4, (2, 3))
    one.push(s[0], a[0], r[0], ns[0], d[0], m[0])
    many.push(s[0], a[0], r[0], ns[0], d[0], m[0])
    for i in range(1, n):
        one.push(s[i], a[i], r[i], ns[i], d[i], m[i])
    many.push_batch(s[1:], a[1:], r[1:], ns[1:], d[1:], m[1:])
    assert (one.position, len(one)) == (many.position, len(many))
    for f in ReplayBuffer._FIELDS:
        np.testing.assert_array_equal(getattr(one, f), getattr(many, f))


def test_buffer_sampling():
    buf = ReplayBuffer(100, (4, 4))
    n = 60
    states = np.zeros((n, 4, 4), np.uint8)
    states[:, 0, 0] = np.arange(n)
    buf.push_batch(states, np.arange(n) % 4, np.arange(n, dtype=np.float32), states, np.zeros(n, bool))
    rng = np.random.default_rng(5)
    batch = buf.sample(60, rng)
    # Without replacement: all 60 transitions, each once, fields aligned.
    assert sorted(batch.rewards_B.tolist()) == list(range(60))
    np.testing.assert_array_equal(batch.states_BRC[:, 0, 0], batch.rewards_B.astype(np.uint8))
    np.testing.assert_array_equal(batch.actions_B, batch.rewards_B.astype(np.int64) % 4)
    assert batch.next_masks_BA.all()  # no mask given: all legal
    with pytest.raises(ValueError, match="distinct"):
        buf.sample(61, rng)
    assert len(buf.sample(500, rng, replace=True).actions_B) == 500
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(3, (4, 4)).sample(1, rng)


def test_one_million_transitions_fit_well_under_200_mb():
    buf = ReplayBuffer(1_000_000, (4, 4))
    assert buf.nbytes == 1_000_000 * (16 + 16 + 1 + 4 + 1 + 4)  # 42 MB
    assert buf.nbytes < 200 * 2**20
    assert buf.states.dtype == np.uint8 and buf.next_states.dtype == np.uint8


# --------------------------------------------------------------------------------------------- schedules


def test_schedules_values():
    assert Schedule("constant", start=0.3)(10**9) == 0.3
    lin = Schedule("linear", start=1.0, end=0.1, steps=100)
    assert (
        lin(0) == 1.0
        and lin(50) == pytest.approx(0.55)
        and lin(100) == pytest.approx(0.1)
        and lin(10**6) == pytest.approx(0.1)
    )
    seed000 = Schedule("exponential", start=0.9, rate=0.998)
    assert seed000(0) == 0.9
    assert seed000(1) == pytest.approx(0.8982)
    assert seed000(1000) == pytest.approx(0.9 * 0.998**1000) == pytest.approx(0.1216, abs=1e-4)
    floored = Schedule("exponential", start=1.0, end=0.05, rate=0.5)
    assert floored(3) == 0.125 and floored(10) == 0.05
    poly = Schedule("polynomial", start=1.0, end=0.0, steps=10, power=2.0)
    assert poly(5) == pytest.approx(0.25) and poly(10) == 0.0
    grow = Schedule("exponential", start=0.9, end=0.99, rate=1.01)
    assert grow(1) == pytest.approx(0.909) and grow(1000) == 0.99
    with pytest.raises(ValueError, match="unknown schedule"):
        Schedule("cosine")
    with pytest.raises(ValueError, match="steps"):
        Schedule("linear", steps=0)


# ----------------------------------------------------------------------------------------------- masking


def test_masked_argmax_never_picks_an_illegal_move():
    mask = torch.from_numpy(legal_masks(to_exponents(ONLY_LEFT)[None]))
    for q in (
        [100.0, -5.0, 100.0, 100.0],
        [float("nan"), float("-inf"), 1e38, float("inf")],
        [0.0, 0.0, 0.0, 0.0],
    ):
        assert masked_argmax(torch.tensor([q]), mask).tolist() == [1]
    assert masked_max(torch.tensor([[100.0, -5.0, 100.0, 100.0]]), mask).tolist() == [-5.0]
    none = torch.zeros(1, 4, dtype=torch.bool)
    assert masked_argmax(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), none).tolist() == [-1]
    assert masked_max(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), none).tolist() == [0.0]


def test_masked_softmax_and_sampling():
    logits = torch.tensor([[5.0, 1.0, 5.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[False, True, False, True], [False, False, False, False]])
    p = masked_softmax(logits, mask)
    assert p[0].tolist() == pytest.approx([0.0, 0.5, 0.0, 0.5])
    assert p[1].tolist() == [0.0, 0.0, 0.0, 0.0]
    logp = masked_log_softmax(logits[:1], mask[:1])
    assert logp[0, 1].item() == pytest.approx(math.log(0.5)) and logp[0, 0].item() == float("-inf")
    probs = np.array([[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0], [0.7, 0.1, 0.1, 0.1]])
    masks = np.array([[True, False, True, False], [True, True, False, False], [False, True, False, False]])
    for u in (0.0, 0.25, 0.5, 0.75, 1.0 - 1e-16):
        picks = sample_from_probs(probs, masks, np.full(3, u))
        assert masks[np.arange(3), picks].all()
    # 0 -> first legal, 0.75 -> the second half of a [0.5, 0.5] split
    assert sample_from_probs(probs[:1], masks[:1], np.array([0.0])).tolist() == [0]
    assert sample_from_probs(probs[:1], masks[:1], np.array([0.75])).tolist() == [2]
    rng = np.random.default_rng(6)
    picks = sample_from_probs(
        np.tile([[0.1, 0.2, 0.3, 0.4]], (20000, 1)), np.ones((20000, 4), bool), rng.random(20000)
    )
    np.testing.assert_allclose(np.bincount(picks, minlength=4) / 20000, [0.1, 0.2, 0.3, 0.4], atol=0.015)


# ---------------------------------------------------------------------------------------------- networks


def test_seed000_networks_have_the_seed_layer_sizes():
    shape = make_encoder("log2").shape(4, 4)
    simple = build_network("simple", shape)
    assert [p.shape for p in simple.parameters()] == [(128, 16), (128,), (64, 128), (64,), (4, 64), (4,)]
    dropout = build_network("dropout", shape)
    assert [tuple(p.shape) for p in dropout.parameters() if p.ndim == 2] == [
        (64, 16),
        (128, 64),
        (64, 128),
        (4, 64),
    ]
    conv = build_network("conv", shape)
    assert conv.fc1.in_features == 512  # 32 channels x 16 cells, as the seed's nn.Linear(512, 128)
    policy = build_network("policy", shape)
    assert [tuple(p.shape) for p in policy.parameters() if p.ndim == 2] == [(200, 16), (100, 200), (4, 100)]


@pytest.mark.parametrize("name", NETWORKS)
@pytest.mark.parametrize("board", [(4, 4), (3, 5)])
def test_every_network_runs_on_any_board(name, board):
    enc = make_encoder("onehot", 12)
    net = build_network(name, enc.shape(*board), hidden=(32, 16))
    out = net(enc.tensor(random_exps(np.random.default_rng(7), 5, *board)))
    assert out.shape == (5, 4) and torch.isfinite(out).all()


# ------------------------------------------------------------------------------------------------- state


def test_module_and_optimizer_state_round_trip():
    torch.manual_seed(0)
    shape = (1, 4, 4)
    net = build_network("simple", shape)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(8, *shape)
    for _ in range(3):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
    arrays = nn_state.module_arrays(net, "net/")
    opt_arrays, opt_meta = nn_state.optimizer_state(opt, "opt/")
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in {**arrays, **opt_arrays}.values())
    import json

    opt_meta = json.loads(json.dumps(opt_meta))  # what a checkpoint holds

    twin = build_network("simple", shape)
    twin_opt = torch.optim.Adam(twin.parameters(), lr=0.5)
    nn_state.load_module_arrays(twin, arrays, "net/")
    nn_state.load_optimizer_state(twin_opt, opt_arrays, opt_meta, "opt/")
    assert twin_opt.param_groups[0]["lr"] == 1e-3
    for model, o in ((net, opt), (twin, twin_opt)):
        o.zero_grad()
        model(x).pow(2).mean().backward()
        o.step()
    for a, b in zip(net.parameters(), twin.parameters()):
        assert torch.equal(a, b)

    bad = dict(arrays)
    bad["net/fc1.weight"] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="shape"):
        nn_state.load_module_arrays(twin, bad, "net/")
    with pytest.raises(ValueError, match="lacks"):
        nn_state.load_module_arrays(twin, {}, "net/")


def test_numpy_rng_state_survives_json():
    import json

    rng = np.random.default_rng(123)
    rng.random(5)
    state = json.loads(json.dumps(nn_state.numpy_rng_state(rng)))
    expected = rng.random(3)
    other = np.random.default_rng(0)
    nn_state.set_numpy_rng_state(other, state)
    np.testing.assert_array_equal(other.random(3), expected)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv_block_pads_like_torch_same():
    from torch import nn

    from agents.nn.networks import ConvBlock

    torch.manual_seed(0)
    block = ConvBlock(3, 32)
    x = torch.randn(5, 3, 4, 4)
    expected = []
    for conv in (block.conv1, block.conv2, block.conv3, block.conv4):
        same = nn.Conv2d(3, 8, conv.kernel_size, padding="same")
        same.load_state_dict(conv.state_dict())
        expected.append(torch.relu(same(x)))
    torch.testing.assert_close(block(x), torch.cat(expected, dim=1))


# ------------------------------------------------------------------------------------------------- moves


def test_slide_batch_hand_drawn():
    from engine.boards import slide_batch

    exps = to_exponents(np.array([[2, 2, 2, 2], [4, 4, 4, 0], [2, 0, 2, 4], [2, 4, 8, 16]]))[None]
    after, value, merges = slide_batch(exps, 1)  # left
    np.testing.assert_array_equal(
        after[0], to_exponents(np.array([[4, 4, 0, 0], [8, 4, 0, 0], [4, 4, 0, 0], [2, 4, 8, 16]]))
    )
    assert value.tolist() == [8 + 8 + 4] and merges.tolist() == [2 + 1 + 1]


@pytest.mark.parametrize(
    ("shape", "top"), [((4, 4), 12), ((4, 4), 18), ((3, 5), 5), ((1, 4), 5), ((2, 2), 4)]
)
def test_afterstates_match_the_engine(shape, top):
    from engine.boards import afterstates

    rng = np.random.default_rng(8)
    exps = random_exps(rng, 200, *shape, top=top)
    exps[0] = 15  # two 32768s side by side: the nibble tables cannot hold the merge
    values = np.where(exps == 0, 0, 2 ** exps.astype(np.int64))
    after, value, merges = afterstates(exps)
    assert after.shape == (200, 4, *shape)
    for i in range(200):
        for a in range(4):
            moved, reward = slide(values[i], a)
            np.testing.assert_array_equal(after[i, a], to_exponents(moved))
            assert value[i, a] == reward
            assert merges[i, a] == np.count_nonzero(values[i]) - np.count_nonzero(moved)


def _rows(first: int, n: int) -> np.ndarray:
    """``n`` 1x1 boards numbered ``first, first + 1, ...``."""
    return np.arange(first, first + n, dtype=np.uint8).reshape(n, 1, 1)


def test_one_overflowing_write_keeps_each_rings_placement():
    """Two rows, then five into a ring of three: both keep the last three (12, 13, 14, oldest first).
    The replay buffer puts them where five single pushes would; the MCTS window writes them from
    where it stood (its placement before RingArrays, kept so that its training order is unchanged)."""
    from agents.mcts import PositionWindow

    buf = ReplayBuffer(3, (1, 1))
    buf.push_batch(_rows(0, 2), np.zeros(2), np.zeros(2), _rows(0, 2), np.zeros(2, dtype=bool))
    buf.push_batch(_rows(10, 5), np.zeros(5), np.zeros(5), _rows(10, 5), np.zeros(5, dtype=bool))
    assert buf.states.ravel().tolist() == [14, 12, 13] and (buf.position, buf.size) == (1, 3)
    assert buf.get_arrays()["buffer/states"].ravel().tolist() == [12, 13, 14]

    window = PositionWindow(3, (1, 1))
    masks = np.ones((5, 4), dtype=bool)
    window.add(_rows(0, 2), np.zeros((2, 4)), masks[:2], np.zeros(2), False)
    window.add(_rows(10, 5), np.zeros((5, 4)), masks, np.arange(5.0), True)
    assert window.exps.ravel().tolist() == [13, 14, 12] and (window.position, len(window)) == (2, 3)
    assert window.targets.tolist() == [3.0, 4.0, 2.0] and window.held_out.all()
    assert window.get_arrays()["window/exps"].ravel().tolist() == [12, 13, 14]
