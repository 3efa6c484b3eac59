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
