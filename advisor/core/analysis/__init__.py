"""The model read over many points: what the reports and sweeps derive from the engine.

Above :mod:`advisor.core.plan` (the engine) and :mod:`advisor.core.verdict` (the rules), and
importing both; nothing below imports this package (``tests/architecture/test_layers.py``):

* :mod:`.points` — many design points at once, the headline metrics and verdict of
  ``decide(sc, evaluate(sc))`` at each, by the same rules (``design_points``, ``evaluate_points``);
* :mod:`.keys` — the workload keys a sweep or a boundary search varies and what each means on
  a scenario (``apply_value``; the text form of an axis is parsed by
  ``advisor.loading.sweep_spec``);
* :mod:`.sweep` — a sweep over one or two keys (``sweep``, ``SweepResult``);
* :mod:`.search` — the bounded searches behind the boundaries, apart from what they look for;
* :mod:`.boundaries` — how far each key moves before the verdict flips;
* :mod:`.figure_data` — the data of the report's figure (latency–load curves, the split, the
  TTFT in parts, goodput per phase), no drawing.
"""
