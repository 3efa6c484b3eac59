"""The verdict on one model result: :mod:`.rules` (preconditions, verdict, warnings, gate
findings), :mod:`.advice` (what to measure next) and :mod:`.moe_warnings`. How far each key
moves before the verdict flips is ``advisor.core.analysis.boundaries``."""
