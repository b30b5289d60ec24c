"""The application layer: every user request as one Qt-free call, shared by the window and the CLI.

``runs``: start or resume a training run from a :class:`~studio.services.runs.RunRequest` (``open_run``),
and what a run's end means for the screen (``run_end``). ``training_process``: a run in a child
process, speaking the typed messages of ``messages``. ``sweep`` / ``sweep_ray``: many runs over a grid
or random search, on this machine or Ray. ``review``: grade a game's moves; ``progress``: a player's
figures over time. Which agent plays (a registry name or a checkpoint, with play settings) is
:class:`agents.spec.AgentSpec`; games are recorded by ``engine.store``'s recorder.

The front ends only gather input, call these, and show results; so they cannot drift apart. None of
these modules imports Qt (``tests/studio/test_services_qt_free.py``).
"""
