"""Sweeps over one or two workload keys: :mod:`.keys` (what can vary and what it means) and
:mod:`.grid` (``sweep``, ``SweepResult``). The text form of an axis is parsed by
``advisor.loading.sweep_spec``; the design points are evaluated by
``advisor.core.plan.points``."""
