"""Brent's bracketing root-finder, step for step as ``scipy.optimize.brentq``.

The closed-loop solve (``core.solve.closed_loop``) runs on the path of ``recommend``, whose cold
start may not pay the ~0.2–0.4 s of importing ``scipy.optimize`` (issue #8, #20). This is
scipy's ``brentq`` (its C routine ``scipy/optimize/Zeros/brentq.c``, after Brent, *Algorithms
for Minimization Without Derivatives*, 1973, ch. 4): the same inverse quadratic
interpolation / secant / bisection steps, the same tolerance ``xtol + rtol·|x|`` and the same
arithmetic in the same order on IEEE doubles, so it evaluates ``f`` at the same points and
returns the same root, bit for bit. tests/core/test_numerics.py checks the points and the
root against scipy's on monotone, flat, stepped and saturating functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

XTOL = 2e-12
"""scipy's default absolute tolerance."""
RTOL_MIN = 4.0 * 2.220446049250313e-16
"""scipy's smallest relative tolerance (4 machine epsilons), its default."""
MAX_ITERATIONS = 100
"""scipy's default iteration cap."""


def brentq(f: Callable[[float], float], a: float, b: float, xtol: float = XTOL,
           rtol: float = RTOL_MIN, maxiter: int = MAX_ITERATIONS) -> float:
    """A root of ``f`` in [a, b] (f(a), f(b) of opposite signs), to ``xtol + rtol·|x|``.

    Raises ValueError for a bad tolerance, a bracket without a sign change or a NaN value of
    ``f``, and RuntimeError when it has not converged in ``maxiter`` iterations (as scipy).
    """
    if xtol <= 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < RTOL_MIN:
        raise ValueError(f"rtol too small ({rtol:g} < {RTOL_MIN:g})")

    def value(x: float) -> float:
        fx = float(f(x))
        if math.isnan(fx):
            raise ValueError(f"The function value at x={x} is NaN; solver cannot continue.")
        return fx

    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre = value(xpre)
    fcur = value(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if _negative(fpre) == _negative(fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and _negative(fpre) != _negative(fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate (secant)
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate (inverse quadratic)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            limit = 3 * abs(sbis) - delta
            if 2 * abs(stry) < (abs(spre) if abs(spre) < limit else limit):  # a good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        if abs(scur) > delta:
            xcur += scur
        else:
            xcur += delta if sbis > 0 else -delta
        fcur = value(xcur)
    raise RuntimeError(f"Failed to converge after {maxiter} iterations, value is {xcur}.")


def _negative(x: float) -> bool:
    """C's ``signbit``: whether the sign bit is set (−0.0 included)."""
    return math.copysign(1.0, x) < 0
