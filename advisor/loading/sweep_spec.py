"""``--vary KEY=SPEC`` text → an axis of values for ``advisor.core.analysis.sweep``.

SPEC is a list (``8,16,32``) or a range: ``A:B`` (every integer for integer keys, else
:data:`DEFAULT_FLOAT_POINTS` evenly spaced points), ``A:B:N`` (N evenly spaced points),
``A:B:log`` (:data:`DEFAULT_LOG_POINTS` log-spaced points; integers rounded and
deduplicated) or ``A:B:log:N``. Values outside the model's domain (``advisor.core.limits``,
as each key states it) are refused with a :class:`~advisor.core.analysis.keys.SweepError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from advisor.core.analysis.keys import (
    KEYS,
    Axis,
    KeyInfo,
    SweepError,
    check_value,
    key_info,
    value_label,
)
from advisor.core.hardware import LinkSpec
from advisor.core.limits import MAX_SWEEP_POINTS_PER_AXIS

DEFAULT_FLOAT_POINTS = 101
DEFAULT_LOG_POINTS = 64


def parse_spec(key: str, spec: str) -> tuple[tuple[Any, ...], bool]:
    """Values of ``key`` from SPEC: ``8,16,32`` (a list), ``8:4096`` (a range: every integer
    for integer keys, else 101 evenly spaced points), ``8:4096:N`` (N evenly spaced points),
    ``8:4096:log`` (64 log-spaced points; integers rounded and deduplicated) or
    ``8:4096:log:N``. Returns (values, log). Link ids come back as strings."""
    info = key_info(key)
    text = spec.strip()
    if not text:
        raise SweepError(f"{key}: empty value list")
    if info.kind == "link":
        if ":" in text:
            raise SweepError(f"{key} takes a list of interconnect ids, not a range")
        ids = [t.strip() for t in text.split(",")]
        if any(not t for t in ids):
            raise SweepError(f"{key}: empty item in '{spec}'")
        return tuple(dict.fromkeys(ids)), False
    if ":" not in text:
        try:
            vals = [float(t) for t in text.split(",")]
        except ValueError:
            raise SweepError(f"{key}: '{spec}' is not a list of numbers") from None
        if not all(math.isfinite(v) for v in vals):  # 1e400, inf, nan
            raise SweepError(f"{key}: '{spec}' has a value that is not finite")
        log = False
    else:
        parts = [p.strip() for p in text.split(":")]
        if len(parts) < 2 or len(parts) > 4:
            raise SweepError(f"{key}: '{spec}' is not A:B, A:B:N, A:B:log or A:B:log:N")
        try:
            a, b = float(parts[0]), float(parts[1])
        except ValueError:
            raise SweepError(f"{key}: '{spec}' has a bound that is not a number") from None
        if not (math.isfinite(a) and math.isfinite(b)) or b < a:
            raise SweepError(f"{key}: range '{spec}' must go from low to high")
        log = len(parts) >= 3 and parts[2].lower() == "log"
        count: int | None = None
        count_text = (parts[3] if log and len(parts) == 4
                      else parts[2] if not log and len(parts) == 3 else None)
        if len(parts) == 4 and not log:
            raise SweepError(f"{key}: '{spec}' is not A:B, A:B:N, A:B:log or A:B:log:N")
        if count_text is not None:
            if not count_text.isdigit() or int(count_text) < 1:
                raise SweepError(f"{key}: point count '{count_text}' must be a positive integer")
            count = int(count_text)
            if count > MAX_SWEEP_POINTS_PER_AXIS:  # refused before any array is built
                raise SweepError(f"{key}: {count:,} points (at most "
                                 f"{MAX_SWEEP_POINTS_PER_AXIS:,})")
        if log:
            if a <= 0:
                raise SweepError(f"{key}: a log range needs a positive lower bound")
            vals = list(np.geomspace(a, b, count or DEFAULT_LOG_POINTS))
        elif count is None and info.kind == "int":
            if a != int(a) or b != int(b):
                raise SweepError(f"{key} takes whole numbers")
            n = int(b) - int(a) + 1
            if n > MAX_SWEEP_POINTS_PER_AXIS:
                raise SweepError(f"{key}: {n:,} points (at most {MAX_SWEEP_POINTS_PER_AXIS:,})")
            vals = list(range(int(a), int(b) + 1))
        else:
            vals = list(np.linspace(a, b, count or DEFAULT_FLOAT_POINTS))
        if log or count is not None:
            # keep the given ends exact (geomspace/linspace may round them)
            vals[0], vals[-1] = a, b
    if info.kind == "int":
        if ":" in text:
            vals = [float(round(v)) for v in vals]
        out: tuple[Any, ...] = tuple(sorted({int(v) for v in vals if _int_ok(info, v)}))
    else:
        out = tuple(sorted({float(v) for v in vals}))
    for v in out:
        check_value(info, v)
    if len(out) > MAX_SWEEP_POINTS_PER_AXIS:
        raise SweepError(f"{key}: {len(out):,} points (at most {MAX_SWEEP_POINTS_PER_AXIS:,})")
    return out, log


def _int_ok(info: KeyInfo, v: float) -> bool:
    if v != int(v):
        raise SweepError(f"{info.name} takes whole numbers, not {v:g}")
    return True


def make_axis(key: str, spec: str, links: Mapping[str, LinkSpec] | None = None) -> Axis:
    """An :class:`Axis` from a key and SPEC; ``links`` resolves interconnect ids."""
    values, log = parse_spec(key, spec)
    if KEYS[key].kind == "link":
        if links is None:
            raise SweepError(f"{key}: no interconnect profiles to resolve the ids with")
        resolved = []
        for v in values:
            if v not in links:
                raise SweepError(f"{key}: unknown interconnect '{v}'")
            resolved.append(links[v])
        values = tuple(resolved)
    return Axis(key, values, tuple(value_label(v) for v in values), log)


def split_vary(text: str) -> tuple[str, str]:
    """``KEY=SPEC`` → (key, spec)."""
    key, sep, spec = text.partition("=")
    if not sep or not key.strip() or not spec.strip():
        raise SweepError(f"--vary '{text}' is not KEY=SPEC (e.g. cluster.gpus=8:4096:log)")
    return key.strip(), spec.strip()


def axis_from_vary(text: str, link: Callable[[str], LinkSpec]) -> Axis:
    """The axis of one ``--vary KEY=SPEC``; ``link`` resolves interconnect ids (raising
    ``LookupError`` with a message for unknown ones)."""
    key, spec = split_vary(text)
    links = None
    if key in KEYS and KEYS[key].kind == "link":
        values, _ = parse_spec(key, spec)
        links = {}
        for ref in values:
            try:
                links[ref] = link(ref)
            except LookupError as exc:
                raise SweepError(f"{key}: {exc}") from None
    return make_axis(key, spec, links)
