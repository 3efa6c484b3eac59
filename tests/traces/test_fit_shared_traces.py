"""``fit`` on the two public request logs of the shared data folder (read in place through
``tests.shared_files``, never copied; skipped with a reason where it is absent), every fitted
number recomputed here with a few lines of numpy from the file as parsed here (issue #31).

* ``azure_conv_2023.csv``: 19,366 requests of an Azure conversation service, one hour
  (Azure/AzurePublicDataset ``data/AzureLLMInferenceTrace_conv.csv``, CC-BY-4.0; Patel et al.,
  "Splitwise", ISCA 2024).
* ``mooncake_synthetic.jsonl``: 3,993 requests with prefix hash ids (kvcache-ai/Mooncake
  ``FAST25-release/traces/synthetic_trace.jsonl``, Apache-2.0; Qin et al., FAST 2025).
"""

from __future__ import annotations

import csv
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from advisor.core.distributions import LengthDistribution
from advisor.core.trace_fit import FittedTraffic
from advisor.core.trace_timing import IDLE_ALPHA, MIN_TAIL_GAPS
from advisor.loading.traces import load_trace
from advisor.usecases.replay import fit_log
from tests.shared_files import shared_path


def _azure(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t, p, o = [], [], []
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            day, clock = row["TIMESTAMP"].split(" ")
            whole, frac = clock.split(".")
            stamp = datetime.fromisoformat(f"{day} {whole}").replace(tzinfo=UTC).timestamp()
            t.append(stamp + int(frac) / 10 ** len(frac))
            p.append(int(row["ContextTokens"]))
            o.append(int(row["GeneratedTokens"]))
    times = np.array(t)
    return times - times[0], np.array(p), np.array(o)


def _mooncake(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return (np.array([r["timestamp"] for r in rows]) / 1000.0,
            np.array([r["input_length"] for r in rows]),
            np.array([r["output_length"] for r in rows]), [r["hash_ids"] for r in rows])


def _ks(x: np.ndarray, dist: LengthDistribution) -> float:
    """KS distance of whole-token lengths to the rounded lognormal, by brute force."""
    values, ordered = np.unique(x), np.sort(x)
    emp_le = np.searchsorted(ordered, values, side="right") / x.size
    emp_lt = np.searchsorted(ordered, values, side="left") / x.size

    def cdf(v: float) -> float:
        if dist.max_tokens is not None and v >= dist.max_tokens:
            return 1.0
        return 0.5 * (1 + math.erf((math.log(v) - dist.mu) / (dist.sigma * math.sqrt(2))))

    return max(max(abs(a - cdf(v + 0.5)), abs(b - cdf(v - 0.5)))
               for a, b, v in zip(emp_le, emp_lt, values.tolist(), strict=True))


def _check_against_numpy(fit: FittedTraffic, t: np.ndarray, p: np.ndarray,
                         o: np.ndarray) -> None:
    g = np.diff(t)
    idle = fit.idle.gap_index
    busy_gap = np.ones(g.size, dtype=bool)
    busy_gap[idle] = False
    # the idle fence: u + mean excess · ln(N_u / α) over the busy gaps, and it separates them
    for q in (99, 90):  # the 90th when too few busy gaps exceed the 99th
        u = np.percentile(g[busy_gap], q)
        excess = g[busy_gap][g[busy_gap] > u] - u
        if excess.size >= MIN_TAIL_GAPS:
            break
    fence = u + excess.mean() * math.log(excess.size / IDLE_ALPHA)
    assert fit.idle.fence_s == pytest.approx(fence, rel=1e-9)
    assert (g[idle] > fence).all() and (g[busy_gap] <= fence).all()
    mean_busy = (t[-1] - g[idle].sum()) / busy_gap.sum()
    assert fit.idle.duty_cycle == pytest.approx(1 - g[idle].sum() / t[-1], rel=1e-12)
    assert fit.rate_rps == pytest.approx((t.size - 1) / (t[-1] - g[idle].sum()
                                                         + idle.size * mean_busy), rel=1e-9)
    assert fit.span_rate_rps == pytest.approx((t.size - 1) / t[-1], rel=1e-12)
    assert fit.span_burstiness == pytest.approx(g.std() / g.mean(), rel=1e-9)
    assert fit.prompt.mean == pytest.approx(p.mean(), rel=1e-12)
    assert fit.output.p95 == pytest.approx(np.percentile(o, 95), rel=1e-12)
    covered = np.zeros(t.size, dtype=bool)
    for ph in fit.phases:
        sel = np.zeros(t.size, dtype=bool)
        gap_in = np.zeros(g.size, dtype=bool)
        busy_s = 0.0
        for a, b in ph.stretches:
            last = b == t[-1]
            inside = (t >= a) & ((t <= b) if last else (t < b))
            sel |= inside
            idx = np.flatnonzero(inside)
            gaps = idx[:-1]
            gap_in[gaps] = True
            span = b - a
            cut = [i for i in idle if a <= t[i] < b]
            busy_s += span - g[cut].sum() + len(cut) * mean_busy
        covered |= sel
        gap_in &= busy_gap
        assert ph.requests == int(sel.sum())
        assert ph.duration_s == pytest.approx(busy_s, rel=1e-9)
        assert ph.rate_rps == pytest.approx(gap_in.sum() / busy_s, rel=1e-9)
        assert ph.burstiness == pytest.approx(g[gap_in].std() / g[gap_in].mean(), rel=1e-9)
        assert ph.prompt.mean == pytest.approx(p[sel].mean(), rel=1e-12)
        assert ph.prompt.p50 == pytest.approx(np.median(p[sel]), rel=1e-12)
        assert ph.prompt.p95 == pytest.approx(np.percentile(p[sel], 95), rel=1e-12)
        assert ph.output.max == o[sel].max()
        s = ph.prompt  # the written statistics: a median above the mean is left out
        dist = LengthDistribution.fit(mean=s.mean, p50=s.p50 if s.p50 <= s.mean else None,
                                      p95=s.p95, max_tokens=s.max)
        assert ph.fit.prompt_ks == pytest.approx(_ks(p[sel], dist), abs=1e-9)
    assert covered.all()
    assert sum(ph.share for ph in fit.phases) == pytest.approx(1.0, abs=1e-9)


def test_azure_conversation_trace() -> None:
    path = shared_path("data", "traces", "azure_conv_2023.csv")
    t, p, o = _azure(path)
    log = load_trace(path)
    np.testing.assert_allclose(log.arrival_s, t, atol=1e-6)
    fit = fit_log(log)
    _check_against_numpy(fit, log.arrival_s, p, o)
    # what the fit says about this log: the timestamps are fine-grained (no coarse tick); its
    # hour holds four stretches at 4–7 req/s, all at least ten minutes; lengths are several
    # populations (no phase's prompts or outputs are one lognormal)
    assert not fit.quantisation.coarse and fit.quantisation.distinct == t.size
    assert [round(ph.rate_rps, 1) for ph in fit.phases] == [5.1, 7.4, 6.0, 4.1]
    assert all(ph.duration_s >= 600 for ph in fit.phases)
    assert all(ph.fit.prompt_ks > 0.1 for ph in fit.phases)
    assert any("not one lognormal" in limit for limit in fit.limits)


def test_mooncake_synthetic_trace() -> None:
    path = shared_path("data", "traces", "mooncake_synthetic.jsonl")
    t, p, o, ids = _mooncake(path)
    fit = fit_log(load_trace(path))
    _check_against_numpy(fit, t, p, o)
    seen: set[int] = set()
    reused = 0
    for row, prompt in zip(ids, p.tolist(), strict=True):
        lead = 0
        for h in row:
            if h not in seen:
                break
            lead += 1
        seen.update(row)
        reused += min(lead * 512, prompt)
    assert fit.prefix_reuse == pytest.approx(reused / p.sum(), rel=1e-12)
    assert fit.quantisation.tick_s == pytest.approx(0.001) and not fit.quantisation.coarse
    assert fit.quantisation.zero_gap_share == pytest.approx((np.diff(t) == 0).mean())
    rho = fit.phases[0].fit.length_correlation
    assert rho is not None and rho < -0.4  # long prompts, short answers: noted as a limit
    assert any("correlated" in limit for limit in fit.limits)
