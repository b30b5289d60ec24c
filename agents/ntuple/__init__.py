"""The n-tuple network agent (TD learning on n-tuple features; Szubert & Jaśkowski, Wu et al.).

``agent``: the agent, its config and layouts, the Python side of training and play; ``kernels``: the
jitted update, search and play loops (numba, GIL released). Importing this package never imports torch.
"""

from agents.ntuple.agent import (
    LAYOUTS,
    RATE_TILES,
    NTupleAgent,
    NTupleConfig,
    TupleLayout,
    bench_training,
    symmetry_cells,
)

__all__ = [
    "LAYOUTS",
    "RATE_TILES",
    "NTupleAgent",
    "NTupleConfig",
    "TupleLayout",
    "bench_training",
    "symmetry_cells",
]
