"""Step times for the simulator, taken from ``Instance.step_time_s`` and cached.

``Instance.step_time_s`` costs ~25 µs per scalar call (numpy overhead); the simulator needs
millions of steps, so it reads the same function through two caches:

* **decode-only steps** (batch D, mean context C): one row per batch size D, computed on first
  use by a single vectorised call over a uniform context grid of ``CONTEXT_POINTS`` points
  spanning the longest context of the trace, and linearly interpolated in C. The step time is
  linear in C while each kernel class stays memory-bound (or compute-bound), so interpolation
  is exact there; the only error is at a compute/memory crossover inside one grid cell.
* **steps with prefill** (prefill tokens P over n sequences at an effective earlier-context k,
  plus D decodes at mean context C): P, k and D are rounded to *8 significant bits* (exact
  below 256, above it buckets of at most 1/128 relative width, read at the bucket's midpoint)
  and n is exact; each (P, n, k, D) gets a row over a ``MIXED_CONTEXT_POINTS`` context grid on
  first use (one vectorised call), interpolated in C like the decode rows; steps without
  decodes are memoised on (P, n, k) alone. Each input is off by at most 0.4 %, and the step
  time, linear in each, by well under 1 % (checked against ``step_time_s`` on random steps in
  the tests).

A step's prefill pieces rarely have equal length and context, while ``step_time_s`` takes one
piece length P/n and one context k for all of them. ``effective_context`` picks k so that the
step's attention FLOPs match exactly: Σ(2·cᵢ·kᵢ + cᵢ²) = 2·P·k + P²/n. (The KV re-read term n·k
then differs slightly from Σkᵢ; it is a small part of a compute-bound prefill step.)
"""

from __future__ import annotations

import numpy as np

from advisor.core.instance import Instance

CONTEXT_POINTS = 512
"""Points of the decode context grid (uniform from 0 to the longest context + 1 token)."""
MIXED_CONTEXT_POINTS = 256
"""Points of the decode-context grid of steps that also carry prefill tokens. 256 since the
attention kernels take their own roofline (#30 item 2): a mixed step's attention crosses from
prefill-compute-bound to KV-bound inside the context range, and at 64 points one cell's
interpolation missed the kink by up to 3 % (0.4 % at 256; tests/simulate/test_sim_inputs.py)."""
EXACT_BELOW = 256
"""Inputs below this are used exactly; above, they keep 8 significant bits."""


def quantize(x: int) -> int:
    """``x`` rounded to the midpoint of its 8-significant-bit bucket (exact below 256)."""
    if x < EXACT_BELOW:
        return x
    s = x.bit_length() - 8
    return ((x >> s) << s) | (1 << (s - 1))


def effective_context(attention_units: float, tokens: int, seqs: int) -> int:
    """The earlier-context k matching Σ(2·cᵢ·kᵢ + cᵢ²) = ``attention_units`` for equal pieces."""
    if tokens <= 0:
        return 0
    k = (attention_units - tokens * tokens / seqs) / (2.0 * tokens)
    return int(k) if k > 0.0 else 0


class StepTimes:
    """Cached step times of one instance (see the module docstring for the approximations)."""

    __slots__ = (
        "_h",
        "_inv_h",
        "_mixed",
        "_mixed_grid",
        "_mixed_h",
        "_mixed_inv_h",
        "_points",
        "_prefill",
        "_rows",
        "instance",
        "misses",
    )

    def __init__(self, instance: Instance, max_context_tokens: float) -> None:
        self.instance = instance
        top = max(float(max_context_tokens), 1.0) + 1.0
        self._points = CONTEXT_POINTS
        self._h = top / (CONTEXT_POINTS - 1)
        self._inv_h = 1.0 / self._h
        self._mixed_h = top / (MIXED_CONTEXT_POINTS - 1)
        self._mixed_inv_h = 1.0 / self._mixed_h
        self._mixed_grid = np.arange(MIXED_CONTEXT_POINTS + 1, dtype=float) * self._mixed_h
        self._rows: dict[int, list[float]] = {}
        self._mixed: dict[tuple[int, int, int, int], list[float]] = {}
        self._prefill: dict[tuple[int, int, int], float] = {}
        self.misses = 0

    def _row(self, batch: int) -> list[float]:
        grid = np.arange(self._points + 1, dtype=float) * self._h
        row = np.asarray(self.instance.step_time_s(decode_seqs=float(batch),
                                                   decode_context_tokens=grid), dtype=float)
        values: list[float] = row.tolist()
        self._rows[batch] = values
        return values

    def decode(self, batch: int, context: float) -> float:
        """Seconds for a decode-only step of ``batch`` sequences at mean context ``context``."""
        row = self._rows.get(batch)
        if row is None:
            row = self._row(batch)
        x = context * self._inv_h
        x = max(x, 0.0)
        i = int(x)
        if i >= self._points:
            i = self._points - 1
        lo = row[i]
        return lo + (x - i) * (row[i + 1] - lo)

    def step(self, prefill_tokens: int, prefill_seqs: int, prefill_context: int,
             decode_seqs: int, decode_context: float) -> float:
        """Seconds for a step with prefill (see the module docstring)."""
        if not decode_seqs:
            key3 = (quantize(prefill_tokens), prefill_seqs, quantize(prefill_context))
            t = self._prefill.get(key3)
            if t is None:
                self.misses += 1
                t = float(self.instance.step_time_s(
                    prefill_tokens=float(key3[0]), prefill_seqs=float(key3[1]),
                    prefill_context_tokens=float(key3[2])))
                self._prefill[key3] = t
            return t
        key = (quantize(prefill_tokens), prefill_seqs, quantize(prefill_context),
               quantize(decode_seqs))
        row = self._mixed.get(key)
        if row is None:
            self.misses += 1
            row = np.asarray(self.instance.step_time_s(
                prefill_tokens=float(key[0]), prefill_seqs=float(key[1]),
                prefill_context_tokens=float(key[2]), decode_seqs=float(key[3]),
                decode_context_tokens=self._mixed_grid), dtype=float).tolist()
            self._mixed[key] = row
        x = decode_context * self._mixed_inv_h
        x = max(x, 0.0)
        i = int(x)
        if i >= MIXED_CONTEXT_POINTS:
            i = MIXED_CONTEXT_POINTS - 1
        lo = row[i]
        return lo + (x - i) * (row[i + 1] - lo)
