"""The verdict on one model result: :mod:`.rules` (the one registry of preconditions and the
verdict policy, for one design point or many), :mod:`.decision` (the decision every report
shows, computed once) and :mod:`.gate` (what ``check`` fails on). The words are the
renderers' (``advisor.render.prose``, ``advisor.render.advice``); how far each key moves
before the verdict flips is ``advisor.core.analysis.boundaries``."""
