"""Issue 47 item 11: an n-tuple network loaded to play holds its weights and nothing else (the
temporal-coherence sums, twice the weights, stay on disk), read without a second copy on the way; a
resumed run still reads them all and goes on exactly; agents that share one network never write it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents.base import Agent, Budget
from agents.checkpoint import load_checkpoint
from agents.ntuple import NTupleAgent, NTupleConfig
from agents.spec import AgentSpec
from tests.agents.checkpoint_checks import assert_same_play

# Four stages of the 4x4 layout: 4 MB of weights, enough that a copy on the way shows in the peak.
STAGES = (2048, 4096, 8192)


def trained(tmp_path: Path, *, dense: bool) -> tuple[NTupleAgent, Path]:
    """A 4x4 network with TC sums, trained a little, all four stages live; saved (dense: every
    weight set, so the file stores whole tables; else sparse: index + the set weights)."""
    agent = NTupleAgent(NTupleConfig(layout="4x4", stage_tiles=STAGES, restart=0.0), seed=5)
    list(agent.train(Budget(episodes=40)))  # ends on a finished game
    agent.n_live = agent.layout.n_stages
    if dense:
        agent.weights += np.float32(0.25)
    return agent, agent.save(tmp_path / ("dense" if dense else "sparse"))


def peak_bytes(load: Callable[[], Agent]) -> tuple[Agent, int]:
    """``load()`` and the most memory it held at once beyond what it returns' start (tracemalloc
    sees numpy's buffers)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        agent = load()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return agent, peak


def test_a_dense_network_loaded_to_play_holds_its_weights_once(tmp_path):
    agent, path = trained(tmp_path, dense=True)
    weights = agent.weights.nbytes
    assert weights == 4 * 4 * 4 * 65536  # 4 stages x 4 tuples x 16^4 float32
    loaded, peak = peak_bytes(lambda: AgentSpec.from_checkpoint(path, "ntuple").build())
    assert isinstance(loaded, NTupleAgent)
    assert loaded._tc is None  # the learning state stayed on disk: play never reads it
    np.testing.assert_array_equal(loaded.weights, agent.weights)
    # read straight into the network: the file's table is the weights (before: weights, both TC
    # sums, a zeroed copy of each and their stack, 9x). tracemalloc also counts the new agent's
    # zeroed table, which it never touches (no resident memory): 2x.
    assert loaded.weights.flags.writeable and loaded.weights.dtype == np.float32
    assert peak <= 2 * weights + (512 << 10), peak / weights  # + numpy's 256 KB read buffer
    assert_same_play(loaded, agent, seed=4, moves=25)


def test_a_sparse_network_loaded_to_play_never_copies_its_index(tmp_path):
    agent, path = trained(tmp_path, dense=False)
    weights = agent.weights.nbytes
    nz = int(np.count_nonzero(agent.weights))
    assert 0 < nz < agent.weights.size // 4
    loaded, peak = peak_bytes(lambda: AgentSpec.from_checkpoint(path, "ntuple").build())
    assert isinstance(loaded, NTupleAgent) and loaded._tc is None
    np.testing.assert_array_equal(loaded.weights, agent.weights)
    # the weights (and the untouched table of the new agent), the stored index and values (4 + 4
    # bytes an entry) and a chunk of them converted: no int64 copy of the index, no TC sums
    assert peak <= 2 * weights + 16 * nz + (512 << 10), (peak, weights, nz)
    assert_same_play(loaded, agent, seed=4, moves=25)


def test_a_run_resumed_from_a_dense_checkpoint_goes_on_exactly(tmp_path):
    a, path = trained(tmp_path, dense=True)
    b = load_checkpoint(path)  # a resume: everything read, the TC sums included
    assert isinstance(b, NTupleAgent) and b._tc is not None
    np.testing.assert_array_equal(b._tc, a._tc)
    list(a.train(Budget(episodes=15)))
    list(b.train(Budget(episodes=15)))
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a._tc, b._tc)


def test_training_a_shared_copy_leaves_the_other_players_network_alone(tmp_path):
    _, path = trained(tmp_path, dense=False)
    player = AgentSpec.from_checkpoint(path, "ntuple").build()
    assert isinstance(player, NTupleAgent)
    other = player.shared_copy()
    assert other.weights is player.weights and other._tt is None
    other.config = other.config.replace(search_depth=2)
    assert player.config.search_depth == 1  # settings are each player's own
    before = player.weights.copy()
    list(other.train(Budget(episodes=5)))
    assert other.weights is not player.weights
    np.testing.assert_array_equal(player.weights, before)
    assert not np.array_equal(other.weights, before)
