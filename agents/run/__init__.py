"""Training runs: ``agent.train()`` recorded in the store, with checkpoints, status and resume.

``run_training(agent, budget, store)`` creates a run and returns a :class:`~agents.run.loop.TrainingRun`,
an iterator of the agent's :class:`~agents.base.MetricEvent` records that, as they pass:

* logs every event to the run's metric history (:mod:`agents.run.metrics_writer`): events are written
  in batches, by the training thread when a batch is due and by a small background thread otherwise,
  so an event is on disk within about a second even when the agent goes quiet;
* stops a run that cannot recover, a non-finite metric or episodes without a move
  (:mod:`agents.run.health`), before anything after it is saved;
* saves a checkpoint every ``checkpoint_every_s`` seconds, on pause, and a final one when the run
  stops or finishes, never one whose weights hold NaN or an infinity, and keeps the newest
  ``keep_checkpoints`` files plus the best one (:mod:`agents.run.retention`);
* records finished training games as ``source="training"``, one game in ``log_every``;
* evaluates the policy every ``eval_every_s`` seconds and/or ``eval_every_episodes`` episodes in a
  background process, on the same seeded games every time (:mod:`agents.run.evaluator`); the result is
  an ``"evaluation"`` event, and the checkpoint with the best ``eval_score`` is marked ``best``;
* keeps the run's status: running, paused, stopped (a stop request, Ctrl-C, or the consumer closing
  the iterator), finished (budget used), failed (an exception; the message is stored and re-raised).

``resume_run(run_id, store)`` loads the run's last checkpoint and goes on with what is left of its
budget (or a new budget). :mod:`agents.run.settings` holds the defaults and checks front ends share,
:mod:`agents.run.errors` the errors they show. :mod:`agents.runner` re-exports the public names.
"""
