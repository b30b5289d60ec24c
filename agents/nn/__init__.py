"""Shared pieces of the studio's learners: encoders, replay buffer, schedules, networks, masking, state.

Each module stands alone so that importing one does not pull in the others: ``schedules``,
``replay``, ``boards`` and ``loop`` need no torch (an n-tuple or numba learner can use them without torch);
``encoders``, ``networks``, ``masking`` and ``state`` need torch.

- :mod:`agents.nn.agent`: :class:`TorchAgent` (play through encoder + net over legal moves, optional
  afterstate head and symmetric play, checkpoint state) and :func:`afterstate_values`.
- :mod:`engine.boards`: batched legal-move masks, batched moves / afterstates (row tables on 4x4),
  and the board symmetries with their move maps.
- :mod:`agents.nn.encoders`: exponent boards -> network input (seed 000's log2 vector, one-hot planes).
- :mod:`agents.nn.replay`: :class:`ReplayBuffer` of preallocated arrays.
- :mod:`agents.nn.schedules`: :class:`Schedule` (constant, linear, exponential, polynomial).
- :mod:`agents.nn.networks`: the network zoo (seed 000's Q-networks, seed 001's policy MLP, generic ones).
- :mod:`agents.nn.masking`: legal-move masking where values or logits become moves.
- :mod:`agents.nn.state`: torch modules / optimisers / RNGs <-> plain arrays + JSON for checkpoints; seeding.
- :mod:`agents.training`: budget / control / clock / steps-per-second bookkeeping for training generators.
"""
