"""The engine: the cost model's search, written once, called by everything else.

* :mod:`.shapes` — instance shapes (TP × PP) that fit the model, with their memory;
* :mod:`.capacities` — per-instance capacities and goodput tables of a scenario, grouped by
  cluster size, cached and shared (``Capacities``);
* :mod:`.split` — the ideal and the best integer prefill:decode split (one cluster size with
  runners-up, or many cluster sizes at once);
* :mod:`.static` — the best split kept through every traffic phase;
* :mod:`.best` — the best colocated plan (shape and token budget);
* :mod:`.drift` — a split's goodput at the corners of the assumed mix drift;
* :mod:`.evaluate` — one design point in full detail (``evaluate(sc) → ModelResult``).

A workload's rate solved from these plans (a closed loop's, a finite batch's) is in
``advisor.core.solve``.

The physics they call lives below them in the root of ``advisor.core`` (``instance``,
``memory``, ``queueing``, ``kv_transfer``, ``interference``, ``colocated``,
``disaggregated``); the rules that judge a result are in ``advisor.core.verdict``, the
many-point readings (design points, sweeps, verdict boundaries, the figure's data) in
``advisor.core.analysis``. Nothing here imports any of them, nor ``simulate`` or ``solve``
(``tests/architecture/test_layers.py``: the sub-layers of ``core``).
"""
