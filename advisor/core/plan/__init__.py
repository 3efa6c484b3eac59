"""The engine: the cost model's search, written once, called by everything else.

* :mod:`.shapes` — instance shapes (TP × PP) that fit the model, with their memory;
* :mod:`.capacities` — per-instance capacities and goodput tables of a scenario, grouped by
  cluster size, cached and shared (``Capacities``);
* :mod:`.split` — the ideal and the best integer prefill:decode split (one cluster size with
  runners-up, or many cluster sizes at once);
* :mod:`.static` — the best split kept through every traffic phase;
* :mod:`.best` — the best colocated plan (shape and token budget);
* :mod:`.evaluate` — one design point in full detail (``evaluate(sc) → ModelResult``);
* :mod:`.points` — many design points, headline metrics and verdicts (``design_points``).

The physics they call lives beside them in ``advisor.core`` (``instance``, ``memory``,
``queueing``, ``kv_transfer``, ``interference``, ``colocated``, ``disaggregated``); the sweep
(``advisor.core.sweep``) and the verdict boundaries (``advisor.core.verdict.boundaries``) are
callers of :mod:`.points`.
"""
