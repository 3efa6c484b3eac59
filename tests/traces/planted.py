"""Request logs with known traffic, written in every supported format (the tests make them).

Two phases one after the other — a chat-like stretch (rate 8 req/s, short prompts) and a
document stretch (rate 16 req/s, long prompts) — with gamma inter-arrival gaps of a chosen
CV. Each phase's gaps are scaled to fill its stretch exactly, so its rate in the file is the
planted rate; the CV is unchanged by the scaling. A share of the requests starts with one of
a few shared system prompts (``PREFIX_BLOCKS`` 512-token blocks, chained ``hash_ids``), the
planted prefix reuse.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

BLOCK = 512
PREFIX_BLOCKS = 2
SHARED_PREFIXES = 4


@dataclass(frozen=True)
class PlantedPhase:
    rate_rps: float
    duration_s: float
    prompt_mean: float
    output_mean: float


PHASES = (PlantedPhase(8.0, 250.0, 1500.0, 200.0), PlantedPhase(16.0, 150.0, 4000.0, 400.0))


@dataclass(frozen=True)
class Planted:
    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    phase: np.ndarray
    hash_ids: list[list[int]]
    cv: float
    prefix_share: float
    """Share of requests that start with a shared prefix."""

    @property
    def expected_reuse(self) -> float:
        """Σ min(hits × 512, prompt) / Σ prompt by construction (first uses are misses)."""
        seen: set[int] = set()
        reused = 0
        for ids, p in zip(self.hash_ids, self.prompt.tolist(), strict=True):
            lead = 0
            for h in ids:
                if h in seen:
                    lead += 1
                else:
                    break
            seen.update(ids)
            reused += min(lead * BLOCK, p)
        return reused / float(self.prompt.sum())


def make(cv: float = 1.5, seed: int = 7, prefix_share: float = 0.6,
         phases: tuple[PlantedPhase, ...] = PHASES) -> Planted:
    rng = np.random.default_rng(seed)
    times, prompts, outputs, tags = [], [], [], []
    start = 0.0
    for idx, ph in enumerate(phases):
        n = round(ph.rate_rps * ph.duration_s)
        shape = 1.0 / (cv * cv)
        gaps = rng.gamma(shape, 1.0, size=n)
        gaps *= ph.duration_s / gaps.sum()
        t = start + np.cumsum(gaps) - gaps[0] * 0.5
        times.append(t)
        sigma_p, sigma_o = 0.5, 0.7
        prompts.append(np.maximum(1, np.rint(rng.lognormal(
            np.log(ph.prompt_mean) - sigma_p**2 / 2, sigma_p, n))).astype(np.int64))
        outputs.append(np.maximum(1, np.rint(rng.lognormal(
            np.log(ph.output_mean) - sigma_o**2 / 2, sigma_o, n))).astype(np.int64))
        tags.append(np.full(n, idx))
        start += ph.duration_s
    prompt = np.concatenate(prompts)
    ids: list[list[int]] = []
    unique = 10_000_000
    for p in prompt.tolist():
        blocks = -(-p // BLOCK)
        row: list[int] = []
        if rng.random() < prefix_share and blocks > PREFIX_BLOCKS:
            k = int(rng.integers(0, SHARED_PREFIXES))
            row = [1000 * k + j for j in range(PREFIX_BLOCKS)]
        while len(row) < blocks:
            row.append(unique)
            unique += 1
        ids.append(row)
    return Planted(np.concatenate(times), prompt, np.concatenate(outputs),
                   np.concatenate(tags), ids, cv, prefix_share)


def write(planted: Planted, fmt: str, path: Path) -> Path:
    """Write ``planted`` as a ``fmt`` log at ``path``."""
    t, p, o = planted.arrival_s, planted.prompt.tolist(), planted.output.tolist()
    if fmt == "mooncake":
        with path.open("w", encoding="utf-8") as fh:
            for ts, pi, oi, ids in zip(t.tolist(), p, o, planted.hash_ids, strict=True):
                fh.write(json.dumps({"timestamp": round(ts * 1000), "input_length": pi,
                                     "output_length": oi, "hash_ids": ids}) + "\n")
    elif fmt == "azure":
        base = datetime(2023, 11, 16, 18, 0, 0, tzinfo=UTC)
        with path.open("w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
            for ts, pi, oi in zip(t.tolist(), p, o, strict=True):
                stamp = base + timedelta(microseconds=round(ts * 1e6))
                w.writerow([stamp.strftime("%Y-%m-%d %H:%M:%S.%f") + "0", pi, oi])
    elif fmt == "burstgpt":
        with path.open("w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["Timestamp", "Model", "Request tokens", "Response tokens",
                        "Total tokens", "Log Type"])
            for ts, pi, oi in zip(t.tolist(), p, o, strict=True):
                w.writerow([f"{ts:.3f}", "ChatGPT", pi, oi, pi + oi, "Conversation log"])
    elif fmt == "vllm-bench":
        doc = {"date": "20250601-101500", "backend": "openai", "num_prompts": len(p),
               "request_rate": 12.0, "burstiness": 1.0, "completed": len(p), "failed": 0,
               "input_lens": p, "output_lens": o, "ttfts": [0.05] * len(p),
               "itls": [[0.01, 0.012]] * len(p), "generated_texts": ["ok \"quoted\" ]}"] * len(p),
               "errors": [""] * len(p),
               "start_times": [1000.0 + x for x in t.tolist()], "mean_ttft_ms": 50.0}
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        raise ValueError(fmt)
    return path


# ------------------------------------------------------------------ idle, ticks, populations
def gamma_times(rng: np.random.Generator, rate: float, cv: float, n: int,
                start: float = 0.0) -> np.ndarray:
    """``n`` arrival times after ``start`` with gamma gaps of mean 1/rate and CV ``cv``."""
    shape = 1.0 / (cv * cv)
    return start + np.cumsum(rng.gamma(shape, 1.0 / (shape * rate), n))


def lognormal_lengths(rng: np.random.Generator, mean: float, sigma: float,
                      n: int) -> np.ndarray:
    """Whole-token lognormal lengths of the given mean (before rounding) and σ."""
    return np.maximum(1, np.rint(rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, n))
                      ).astype(np.int64)


@dataclass(frozen=True)
class IdleLog:
    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    idle_s: np.ndarray
    """The planted idle gaps."""
    rate_rps: float
    cv: float


def make_idle(seed: int, rate: float = 5.0, cv: float = 1.5, busy_periods: int = 13,
              idle_range_s: tuple[float, float] = (60.0, 217.0)) -> IdleLog:
    """Busy periods of 100–300 s (gamma gaps at ``rate``, CV ``cv``) separated by idle gaps
    drawn uniformly in ``idle_range_s`` (the shape of issue #31's Azure code trace: 12 idle
    gaps of 60–217 s)."""
    rng = np.random.default_rng(seed)
    idle = rng.uniform(*idle_range_s, busy_periods - 1)
    parts, start = [], 0.0
    for i in range(busy_periods):
        n = int(rate * rng.uniform(100.0, 300.0))
        t = gamma_times(rng, rate, cv, n, start)
        parts.append(t)
        start = float(t[-1]) + (float(idle[i]) if i < idle.size else 0.0)
    t = np.concatenate(parts)
    t -= t[0]
    n = t.size
    return IdleLog(t, lognormal_lengths(rng, 1500.0, 0.6, n), lognormal_lengths(rng, 200.0, 0.7, n),
                   idle, rate, cv)


def make_whole_seconds(seed: int, rate: float = 10.0, cv: float = 1.0,
                       n: int = 12_000) -> tuple[np.ndarray, np.ndarray, float]:
    """Arrivals at ``rate`` with CV ``cv`` written as whole seconds (floored, from 0):
    (logged times, true times, true CV of the gaps)."""
    rng = np.random.default_rng(seed)
    t = gamma_times(rng, rate, cv, n)
    g = np.diff(t)
    logged = np.floor(t)
    return logged - logged[0], t, float(g.std() / g.mean())


def make_populations(seed: int, two: bool, minutes: float = 15.0,
                     rate: float = 5.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``minutes`` of chat (prompts ~800, outputs ~300 tokens) followed by as long of
    documents (prompts ~4,000, outputs ~150) at the same rate and CV 1 — or, with ``two``
    false, chat for the whole time."""
    rng = np.random.default_rng(seed)
    n = int(rate * minutes * 60)
    t1 = gamma_times(rng, rate, 1.0, n)
    t2 = gamma_times(rng, rate, 1.0, n, float(t1[-1]))
    t = np.concatenate((t1, t2))
    second = (4000.0, 150.0) if two else (800.0, 300.0)
    prompt = np.concatenate((lognormal_lengths(rng, 800.0, 0.5, n),
                             lognormal_lengths(rng, second[0], 0.5, n)))
    output = np.concatenate((lognormal_lengths(rng, 300.0, 0.6, n),
                             lognormal_lengths(rng, second[1], 0.6, n)))
    return t - t[0], prompt, output
