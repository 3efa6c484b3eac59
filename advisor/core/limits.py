"""Every input limit, in one place: the domain the model is evaluated on and the size of
everything pd-advisor reads or is asked to compute (#21).

The workload format (``advisor.loading.workload_schema``), ``sweep --vary`` (the sweep keys
and their parser), the verdict-boundary searches, the file readers (YAML, ``config.json``,
benchmark results, request logs), the profile schema and ``simulate`` all refuse or stop at
these values, so nothing downstream overflows and every part of the tool agrees on what it
can evaluate. The README's "Input limits" lists each one; a refusal is a located error or a
usage error, exit 2.
"""

from __future__ import annotations

MAX_GPUS = 100_000
"""Largest cluster (and node) evaluated, and the top of the GPU-count boundary search. The
integer prefill:decode split scales with the GPU count: 100,000 GPUs take ~3 s and ~300 MB
in a sweep of every count, a million ~20 s and ~2 GB, and int64 arithmetic overflows long
before 10**30."""

MAX_NICS_PER_UNIT = 64
"""Most NICs one GPU or one node may have (``cluster.nics_per_node``, an interconnect
profile's ``nics.count``): AWS p5 nodes have 32 EFA devices, the largest build known; more
is a typo, not a cluster."""

MIN_RATE_RPS = 1e-6
"""Smallest arrival rate accepted, requests/s (one request every 12 days). The workload
format checks it apart from its "must be greater than 0", so zero and negative rates keep
that plain message."""

MAX_RATE_RPS = 1e9
"""Largest arrival rate accepted, requests/s: beyond it capacity/rate ratios and the KV
demand (rate × bytes) leave the floating-point range."""

MAX_BURSTINESS = 1000.0
"""Largest coefficient of variation of inter-arrival times (the queueing squares it)."""

MAX_TOKENS = 10_000_000
"""Longest token length (prompt, output, any statistic) and token budget accepted: ten
million, far past every context window, while token counts still convert to floats
(10**400 does not)."""

MAX_PHASES = 24
"""Traffic phases one workload may hold: one per hour of a day. The recommendation evaluates
every phase at every candidate split and at each step of the verdict-boundary searches, so
its time grows with the phases (8 GPUs: 1 phase ~2 s, 24 phases ~4 s; 4,096 GPUs with 24
phases ~45 s on a 2-core machine); 1,000 phases ran past 600 s."""

MAX_SWEEP_POINTS_PER_AXIS = 200_000
"""Values one sweep axis may hold."""

MAX_SWEEP_POINTS = 2_000_000
"""Design points one sweep may evaluate (the product of its axes)."""

MAX_PRICE_PER_GPU_HOUR = 10_000.0
"""Largest ``cluster.price_per_gpu_hour`` accepted, USD (list prices are 0.3-15 USD)."""

MAX_CONCURRENCY = 10_000_000
MAX_BATCH_REQUESTS = 10_000_000
"""Requests of a finite batch (``traffic.requests``): the simulator's ceiling too."""
"""Largest closed-loop client count (``traffic.concurrency``) accepted: workload and sweeps."""

MAX_CONFIG_COUNT = 100_000_000
"""Largest whole number read from a Hugging Face ``config.json`` (layers, hidden size,
heads, experts, vocabulary, context positions): a hundred million, past every published
model (the longest context, 10,485,760 positions, is a tenth of it), so parameter counts
and byte sizes stay finite (``num_hidden_layers: 1e300`` once gave ``total_params inf``)."""

MAX_BENCHMARK_RUNS = 64
"""Benchmark runs one ``calibrate`` fits (every file together): a sweep of 64 loads is far
more than the three factors need, and each run costs a prediction per step of the fit
(5,000 appended runs took 311 s). A file is read no further than its 65th run, so a 64 MiB
file is refused in about a second."""

MAX_BENCHMARK_LATENCY_S = 1e6
"""Longest latency statistic or per-request latency accepted from a benchmark file, in
seconds (11.6 days): past it the value is an error, and ``1e300`` ms or ``[1e308, ...]``
would overflow the fit."""

# ---- physical ranges of profile values (#21): outside them a profile is a typo or a unit
# error, and values such as 5e-324 B/s overflow the model. Each range is wide: several
# orders of magnitude beyond every shipped profile on both sides.
GPU_FLOPS_RANGE = (1e12, 1e18)
"""Dense tensor peak per GPU, FLOP/s: 1 TFLOP/s to 1 EFLOP/s (shipped: 121e12 to 5e15)."""
GPU_MEMORY_BYTES_RANGE = (2**30, 2**47)
"""Memory per GPU, bytes: 1 GiB to 128 TiB (shipped: 24 GB to 288 GB)."""
GPU_MEMORY_BANDWIDTH_RANGE = (1e10, 1e15)
"""Memory bandwidth per GPU, bytes/s: 10 GB/s to 1 PB/s (shipped: 300 GB/s to 8 TB/s)."""
LINK_BANDWIDTH_RANGE = (1e8, 1e14)
"""Interconnect bandwidth per direction per GPU, bytes/s: 100 MB/s to 100 TB/s."""
MAX_OVERHEAD_S = 10.0
"""Largest fixed latency or per-step/per-request overhead in a profile or overlay, seconds."""

# ---- files read (each refused beyond its size after reading one byte more) -------------
MAX_YAML_FILE_BYTES = 1024 * 1024
"""Largest YAML file read (workloads, ``.pd-advisor.yaml``, profiles, calibration overlays):
1 MiB; bigger ones are refused after reading 1 MiB + 1 byte."""

MAX_YAML_NODES = 100_000
"""Most nodes (mappings, lists, keys and scalars) a YAML document may hold once every alias is
expanded; the example workloads have at most 79, the built-in profiles at most 113."""

MAX_YAML_DEPTH = 100
"""Most levels a YAML document may nest: nodes on a path from the root to a scalar, both
included, counting what aliases stand for; the examples and profiles have at most six."""

MAX_CONFIG_FILE_BYTES = 1024 * 1024
"""Largest Hugging Face ``config.json`` read (1 MiB; real ones are a few KiB)."""

MAX_BENCHMARK_FILE_BYTES = 64 * 1024 * 1024
"""Largest benchmark result file read (detailed vLLM files carry every generated text)."""

MAX_REQUEST_LOG_BYTES = 64 * 2**20
"""Largest request log read by ``fit`` and ``simulate --trace`` (streamed)."""

MAX_REQUEST_LOG_LINE_BYTES = 2**20
"""Longest line of a request log."""

# ---- simulation ------------------------------------------------------------------------
MAX_SIMULATED_REQUESTS = 10_000_000
"""Most requests one ``simulate`` run draws per mode (``--requests`` above it is a usage
error): about four minutes per mode at the benchmark's 2.5 M requests per minute."""

MAX_REQUESTS_IN_FLIGHT = 1_000_000
"""Most requests in the simulated system at once; a run that gets there stops as
overloaded. Memory follows the requests in flight (about 400 bytes each), not the requests
simulated, so this bounds it near 400 MB."""

MIN_TIME_SCALE = 1e-3
"""Smallest ``--time-scale`` of ``fit`` and ``simulate --trace`` (a log replayed 1,000×
slower)."""

MAX_TIME_SCALE = 1e3
"""Largest ``--time-scale`` (a log replayed 1,000× faster)."""
