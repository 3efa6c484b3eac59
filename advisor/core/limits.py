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
integer prefill:decode split scales with the GPU count: a CSV sweep of every count from 1 to
100,000 took 9.3 s of CPU and 0.42 GB peak RSS for ``examples/prefill-heavy-70b-ib.yaml``,
28 s and 0.47 GB for the three-phase ``benchmarks/three-phase.yaml`` (32 s and 0.68 GB before
#34 evaluated sweeps in blocks; the 2-core development machine at a load average of about 5,
so CPU times read high), and int64 arithmetic overflows long before 10**30."""

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

MAX_SWEEP_POINTS_PER_AXIS = 2_000_000
"""Values one sweep axis may hold: as many as a whole sweep (:data:`MAX_SWEEP_POINTS`), so
one key alone can span every point a grid of two can (#34; it was 200,000). A count
beyond it (``A:B:N``) is refused before any value is built."""

MAX_SWEEP_POINTS = 2_000_000
"""Design points one sweep may evaluate (the product of its axes). The grid is evaluated in
blocks of 65,536 points (``core.analysis.sweep.BLOCK_POINTS``) and its CSV and JSON written
in pieces, so beyond a block only the results grow with the grid: about 200 bytes a point.
Measured (#34, CSV to /dev/null, the 2-core development machine while shared; CPU is user +
system): ``benchmarks/three-phase.yaml`` over 1,000 cluster sizes × 1,000 rates (10**6
points) 12.7 s and 0.50 GB peak RSS (63.8 s and 3.8 GB before #34), 2,000 × 1,000 (2·10**6)
27 s and 0.66 GB; one key of 2·10**6 rates of ``examples/chat-8b-single-node.yaml`` 21 s and
0.87 GB (the axis's values and labels are held too). ``benchmarks/bench_large.py`` measures
the 10**6-point grid."""

MAX_SWEEP_WORK_S = 600.0
"""Estimated CPU seconds one sweep may take (ten minutes): ``steps × SWEEP_STEP_COST_S +
points × SWEEP_POINT_COST_S``, a capacity step per distinct value of the capacity keys (token
lengths, SLOs, burstiness, links, concurrency). The point limit alone let a closed-loop grid
run for ~4.4 hours (#33)."""

SWEEP_STEP_COST_S = {"open": 0.15, "closed": 1.0}
"""CPU seconds of one capacity step (rebuilding capacities for one combination of capacity-key
values), open-loop and closed-loop workloads (a closed-loop one also solves its equivalent
rate again). Measured upper ends, ``benchmarks/bench_sweep_work.py`` on the 2-core development
machine: 48 ms (chat 8B, day-night), 134 ms (DeepSeek-V3 96×H100), 0.65 s (agents 70B, closed
loop)."""

SWEEP_POINT_COST_S = {"open": 2e-4, "closed": 3e-3}
"""CPU seconds per design point within a capacity step: 7 µs (rates) to 0.2 ms (cluster sizes
up to 4,096) open-loop, 2.3 ms closed-loop (``benchmarks/bench_sweep_work.py``)."""

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

MAX_MODEL_LAYERS = 10_000
"""Most decoder layers a model (profile or ``config.json``) may have, and the longest
per-layer list a ``config.json`` may hold (``layer_types``, ``mlp_only_layers``): 80 times
the deepest published model (Llama 3.1 405B, 126 layers). Per-layer work is then bounded too:
a qwen3_moe config with 10**6 layers and a 100,000-entry ``mlp_only_layers`` never finished,
and 10**8 layers in a 1 KB file took 37 s and 1.56 GB (#33)."""

MAX_BENCHMARK_RUNS = 64
"""Benchmark runs one ``calibrate`` fits (every file together): a sweep of 64 loads is far
more than the three factors need, and each run costs a prediction per step of the fit
(5,000 appended runs took 311 s). A file is read no further than its 65th run, so a 64 MiB
file is refused in about a second."""

MAX_BENCHMARK_REQUESTS = 10**9
"""Most completed requests one benchmark run may report (a day at 10,000 req/s is 8.6e8):
``completed: 1e300`` with ``duration: 1e-300`` once overflowed the fit (#33)."""

MAX_BENCHMARK_LATENCY_S = 1e6
"""Longest latency statistic, per-request latency or run ``duration`` accepted from a
benchmark file, in seconds (11.6 days): past it the value is an error, and ``1e300`` ms or
``[1e308, ...]`` would overflow the fit."""

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
EFFICIENCY_RANGE = (0.01, 1.0)
"""An efficiency factor (share of a peak reached: compute, bandwidth, link, all-to-all):
1 % to 100 %. Shipped profiles hold 0.35 to 1.0 and ``calibrate`` fits within 0.02 to 1.0
(``core.calibration.BOUNDS``); below 1 % is a typo or a unit error, and 1e-300 once gave a
decode step of 4.5e300 ms (#33)."""
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
