"""A workload's rate solved from the plans the model picks (``docs/architecture.md``).

* :mod:`.closed_loop` — closed-loop traffic (N clients) solved to its equivalent rate by
  ``plan.evaluate`` at probe rates;
* :mod:`.finite_batch_rate` — a finite batch (``traffic: {requests: N, arrival:
  all-at-once}``) → its makespan on the best plans of both architectures, and the rate
  N / makespan the rest of the model sizes the pools for.

Both sit above ``plan`` and ``simulate`` (the batch's plans are built by the simulator's plan
builder); nothing below imports them (``tests/architecture/test_layers.py``).
"""
