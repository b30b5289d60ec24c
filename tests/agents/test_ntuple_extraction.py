"""The n-tuple kernels' two feature extractions (BMI2 pext, rotate-and-mask) and the TC memory layout.

The rotate-and-mask path runs everywhere; the pext path only where this CPU has a fast pext (the
tests that need it are skipped elsewhere). Both must give the same features, the same training (bit
for bit) and the same play.
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba.core.registry import cpu_target

from agents.base import Agent, Budget
from agents.ntuple import LAYOUTS, NTupleAgent, NTupleConfig, TupleLayout, cpu
from agents.ntuple import kernels as K
from engine.fast import pack_exponents

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HAS_PEXT = cpu.use_pext()
needs_pext = pytest.mark.skipif(not HAS_PEXT, reason=f"no fast pext here: {cpu.host_verdict()[1]}")


def random_exps(rng: np.random.Generator) -> np.ndarray:
    exps = rng.integers(0, 16, size=(4, 4))
    exps[rng.random((4, 4)) < 0.3] = 0
    return exps.astype(np.uint8)


# ------------------------------------------------------------------------------------- CPU detection


@pytest.mark.parametrize(
    ("name", "features", "vendor", "family", "want"),
    [
        ("haswell", "+64bit,+bmi,+bmi2,+avx2", "GenuineIntel", 6, True),
        ("skylake-avx512", "+bmi2,+avx512f", "GenuineIntel", 6, True),
        ("znver3", "+bmi,+bmi2", "AuthenticAMD", 0x19, True),
        ("znver4", "+bmi2,+avx512f", "AuthenticAMD", 0x19, True),
        ("znver5", "+bmi2", "AuthenticAMD", 0x1A, True),
        ("znver2", "+bmi,+bmi2", "AuthenticAMD", 0x17, False),  # microcoded pext
        ("znver1", "+bmi,+bmi2", "AuthenticAMD", 0x17, False),
        ("bdver4", "+bmi,+bmi2", "AuthenticAMD", 0x15, False),
        ("x86-64", "+bmi2", "AuthenticAMD", 0x17, False),  # an unknown name, but a Zen 1/2 family
        ("znver1", "+bmi2", "HygonGenuine", 0x18, False),
        ("ivybridge", "+avx,-bmi2", "GenuineIntel", 6, False),  # no BMI2
        ("sandybridge", "+avx", "GenuineIntel", 6, False),
        ("haswell", "+bmi2", "", None, True),  # off Linux: LLVM's name and features alone
        ("lujiazui", "+bmi2", "CentaurHauls", 7, False),  # speed unknown: the safe path
    ],
)
def test_pext_verdict(name, features, vendor, family, want):
    use, why = cpu.pext_verdict(name, features, vendor, family)
    assert use is want and why


def test_env_var_forces_the_fallback(monkeypatch):
    monkeypatch.setenv(cpu.NO_PEXT_ENV, "1")
    assert cpu.host_verdict() == (False, f"{cpu.NO_PEXT_ENV} is set")
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=1)
    assert agent._ext.ndim == 2  # rotate-and-mask runs
    monkeypatch.setenv(cpu.NO_PEXT_ENV, "0")
    assert cpu.use_pext() is HAS_PEXT
    monkeypatch.delenv(cpu.NO_PEXT_ENV)
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")  # numba compiles for another CPU: pext may be absent
    assert cpu.use_pext() is False


def test_pext_masks_only_for_sorted_tuples():
    masks = TupleLayout("4x4", LAYOUTS["4x4"]).pext_masks()
    assert masks is not None
    assert [hex(int(m)) for m in masks] == ["0xffff", "0xffff0000", "0xff00ff", "0xff00ff00000"]
    odd = TupleLayout("odd", ((5, 3, 4, 0), (1, 2)))
    assert odd.pext_masks() is None
    assert odd.extraction(pext=True).ndim == 2  # falls back to runs, whatever the CPU
    assert TupleLayout("4x4", LAYOUTS["4x4"]).extraction(pext=False).ndim == 2


def test_numba_cache_is_keyed_by_the_cpu():
    # a cached kernel is reused only on the same CPU name and feature list (numba's index key), so a
    # pext-compiled kernel is never loaded on a machine without pext; this pins that numba behaviour
    runs, tlen, toff, thr = TupleLayout("c", ((0,),)).arrays()
    K.evaluate(np.zeros(16, dtype=np.float32), np.uint64(0), runs, tlen, toff, 16, thr, 1)
    sig = K.evaluate.signatures[0]
    codegen = cpu_target.target_context.codegen()
    key = K.evaluate._cache._index_key(sig, codegen)
    assert key[1] == codegen.magic_tuple()
    assert key[1][1] == llvm.get_host_cpu_name()
    assert ("+bmi2" in key[1][2].split(",")) is ("+bmi2" in llvm.get_host_cpu_features().flatten().split(","))


# ------------------------------------------------------------------------------------ same features


@needs_pext
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_both_extractions_give_the_same_features_on_random_boards(name):
    layout = TupleLayout(name, LAYOUTS[name])
    runs, tlen, _, _ = layout.arrays()
    masks = layout.pext_masks()
    assert masks is not None
    rng = np.random.default_rng(21)
    for _ in range(300):
        b = np.uint64(pack_exponents(random_exps(rng)))
        np.testing.assert_array_equal(K.features(b, masks, tlen), K.features(b, runs, tlen))
    # all-15 and empty boards: the extreme nibbles
    for b in (np.uint64(0), np.uint64(0xFFFFFFFFFFFFFFFF)):
        np.testing.assert_array_equal(K.features(b, masks, tlen), K.features(b, runs, tlen))


def _agents(monkeypatch, **kw) -> tuple[NTupleAgent, NTupleAgent]:
    """The same agent twice: one on rotate-and-mask (forced), one on this CPU's choice."""
    monkeypatch.setenv(cpu.NO_PEXT_ENV, "1")
    slow = NTupleAgent(NTupleConfig(**kw), seed=5)
    monkeypatch.delenv(cpu.NO_PEXT_ENV)
    fast = NTupleAgent(NTupleConfig(**kw), seed=5)
    assert slow._ext.ndim == 2 and fast._ext.ndim == (1 if HAS_PEXT else 2)
    return slow, fast


@pytest.mark.parametrize("layout", ["4x4", "4x6"])
def test_both_extractions_train_the_same_weights(monkeypatch, layout):
    # the fallback trains and plays correctly, and where pext runs it learns the very same bits
    slow, fast = _agents(monkeypatch, layout=layout, stage_tiles=(256,) if layout == "4x4" else ())
    for agent in (slow, fast):
        for _ in agent.train(Budget(steps=30_000)):
            pass
    assert slow.counters.episodes == fast.counters.episodes > 20
    np.testing.assert_array_equal(slow.weights, fast.weights)
    assert slow._tc is not None and fast._tc is not None
    np.testing.assert_array_equal(slow._tc, fast._tc)
    assert slow.n_live == fast.n_live
    assert np.abs(slow.weights).sum() > 0
    for depth in (1, 2):
        slow.config.search_depth = fast.config.search_depth = depth
        a, b = slow.play_fast(3, seed=9), fast.play_fast(3, seed=9)
        np.testing.assert_array_equal(a["score"], b["score"])
        np.testing.assert_array_equal(a["moves"], b["moves"])
        assert a["score"].min() > 0


def test_fallback_training_matches_the_studio_before_the_speed_work(monkeypatch):
    # figures of the rotate-and-mask learner with three separate tables (main before this change),
    # 4x4 layout, seed 5, 20,000 moves: the interleaved TC sums and fused updates change no bit
    monkeypatch.setenv(cpu.NO_PEXT_ENV, "1")
    agent = NTupleAgent(NTupleConfig(layout="4x4"), seed=5)
    for _ in agent.train(Budget(steps=20_000)):
        pass
    assert agent._tc is not None
    got = (
        agent.counters.episodes,
        float(agent.weights.astype(np.float64).sum()),
        float(np.abs(agent._tc[:, 0]).astype(np.float64).sum()),
        float(agent._tc[:, 1].astype(np.float64).sum()),
    )
    assert got == EXPECTED_BEFORE


#: computed with main at 109972c (separate tc_e / tc_a arrays, rotate-and-mask), see the test above
EXPECTED_BEFORE = (102, 212116.42238678865, 29995197.009607077, 151310900.73141646)


# ---------------------------------------------------------------------------------- TC layout on disk


def test_checkpoint_keeps_two_tc_tables_and_old_files_load(tmp_path):
    agent = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0), seed=4)
    list(agent.train(Budget(episodes=30)))
    assert agent._tc is not None and agent._tc.shape == (agent.layout.size, 2)
    arrays, meta = agent.get_state()
    # the format every earlier checkpoint has: separate error and |error| tables (sparse here)
    assert set(arrays) == {"index", "weights", "tc_errors", "tc_abs_errors"}
    idx = arrays["index"].astype(np.int64)
    np.testing.assert_array_equal(arrays["tc_errors"], agent._tc[idx, 0])
    np.testing.assert_array_equal(arrays["tc_abs_errors"], agent._tc[idx, 1])
    # dense: three plain tables
    dense = {
        "weights": agent.weights.copy(),
        "tc_errors": np.ascontiguousarray(agent._tc[:, 0]),
        "tc_abs_errors": np.ascontiguousarray(agent._tc[:, 1]),
    }
    other = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0), seed=4)
    other.set_state(dense, {**meta, "storage": "dense"})
    assert other._tc is not None
    np.testing.assert_array_equal(other._tc, agent._tc)
    np.testing.assert_array_equal(other.weights, agent.weights)
    loaded = Agent.load(agent.save(tmp_path / "a"))
    assert isinstance(loaded, NTupleAgent) and loaded._tc is not None
    np.testing.assert_array_equal(loaded._tc, agent._tc)


def test_a_checkpoint_written_before_the_interleaved_layout_loads_and_trains_on():
    # written by main at 109972c (separate tc_e / tc_a arrays): 4x4, restart 0, seed 4, 5 games
    old = Agent.load(FIXTURES / "ntuple_4x4_separate_tc.npz")
    assert isinstance(old, NTupleAgent) and old._tc is not None
    sums = (
        float(old._tc[:, 0].astype(np.float64).sum()),
        float(old._tc[:, 1].astype(np.float64).sum()),
        float(old.weights.astype(np.float64).sum()),
    )
    assert sums == (1218679.9080760926, 18912255.950852588, 72402.80663862219)  # as main saved them
    # and it is the very network a fresh run of the same settings makes here
    fresh = NTupleAgent(NTupleConfig(layout="4x4", restart=0.0), seed=4)
    list(fresh.train(Budget(episodes=5)))
    np.testing.assert_array_equal(fresh.weights, old.weights)
    assert fresh._tc is not None
    np.testing.assert_array_equal(fresh._tc, old._tc)
    list(old.train(Budget(episodes=5)))
    assert old.counters.episodes == 10


def test_moves4_is_four_moves():
    # the search's and the greedy player's all-directions move against engine.fast.move
    from engine.fast import move

    rng = np.random.default_rng(8)
    gb, gr = np.zeros(4, dtype=np.uint64), np.zeros(4, dtype=np.int64)
    boards = [np.uint64(pack_exponents(random_exps(rng))) for _ in range(500)]
    boards += [np.uint64(0), np.uint64(0x1111), np.uint64(0x1111111111111111)]
    for b in boards:
        K.moves4(b, gb, gr)
        for d in range(4):
            nb, r = move(b, d)
            assert (int(gb[d]), int(gr[d])) == (int(nb), int(r)), (hex(int(b)), d)
    K.moves4(np.uint64(0x1111), gb, gr)
    assert int(gb[1]) == 0x0022 and int(gr[1]) == 8  # [2 2 2 2] left: [4 4 0 0], 8 points


def test_transposition_table_entry_is_one_32_byte_row():
    from agents.ntuple.agent import transposition_table

    key, level, gen, val = transposition_table(8)
    assert [a.strides for a in (key, level, gen, val)] == [(32,)] * 4
    base = key.ctypes.data
    assert [a.ctypes.data - base for a in (level, gen, val)] == [8, 16, 24]
    key[3], level[3], gen[3], val[3] = 0xFFFFFFFFFFFFFFFF, 2, 7, -1.5
    assert (int(key[3]), int(level[3]), int(gen[3]), float(val[3])) == (2**64 - 1, 2, 7, -1.5)
    rows = transposition_table(8, threads=3)
    assert [a.shape for a in rows] == [(3, 8)] * 4 and rows[3].strides == (256, 32)
