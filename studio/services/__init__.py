"""The application layer: every user request as one Qt-free call, shared by the window and the CLI.

``runs``: start or resume a training run from a :class:`~studio.services.runs.RunRequest`.
``agents``: one :class:`~agents.spec.AgentSpec` (registry name or checkpoint, with play settings) and
its loader, used by Play hints / Watch, the Arena and ``eval``.
Games are recorded by ``engine.store``'s recorder (the terminal, the window and pygame use it).

The front ends only gather input, call these, and show results; so they cannot drift apart.
"""
