"""The pipeline runtime: what executes a rank's table on its stages.

- ``executor``        runs one rank's lowered action list for one step (and reports failures
  with the rank, the step, the action and the grid);
- ``programs``        a stage's compiled programs (forward, backward, backward-input/weight) and
  the owner of the parameter values a step reads;
- ``backward_split``  cuts a backward jaxpr into input-gradient (I) and weight-gradient (W)
  programs for zero-bubble schedules;
- ``transport``       moves activations and gradients between ranks: in-process (thread ranks,
  ``jax.device_put``) and cross-process (``jax.experimental.transfer``), through the pipeline
  group's process-group backend.
"""
