"""The verdict: :mod:`.rules` (preconditions, verdict, warnings, gate findings) and
:mod:`.boundaries` (how far each key can move before the verdict flips)."""
