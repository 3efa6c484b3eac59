"""``pd-advisor sweep``: formats, grids, errors, and the plot (skipped without matplotlib)."""

from __future__ import annotations

import csv
import io
import json
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.analysis.sweep import SweepResult, sweep
from advisor.loading.sweep_spec import make_axis
from advisor.render.report_json import json_number
from tests.sweep.helpers import EXAMPLES, PREFILL_HEAVY, axis_from_values, scenario

RunCli = Callable[..., Any]


def _expected(spec: str) -> SweepResult:
    return sweep(scenario(PREFILL_HEAVY), [make_axis("cluster.gpus", spec)])


def test_table_reports_the_crossover(run_cli: RunCli) -> None:
    want = _expected("8:256")
    cross = want.crossovers()[0]
    assert cross.value is not None and cross.stable_from is not None
    result = run_cli("sweep", PREFILL_HEAVY, "--vary", "cluster.gpus=8:256", exit_code=0)
    out = result.stdout
    assert "cluster.gpus: 249 values (8 … 256); the workload has 1,024" in out
    if cross.from_start:  # #14: the integer split's gain clears the threshold from 8 GPUs
        assert f"disaggregate already at the first value, cluster.gpus = {cross.value}" in out
    else:
        assert f"crossover: disaggregate from cluster.gpus = {cross.value}" in out
    if cross.stable_from != cross.value:
        assert f"disaggregate throughout from {cross.stable_from}" in out
        assert f"verdict changes: {cross.value} → disaggregate" in out
    assert "decided by" in out and "of 249 points shown" in out


def test_json_has_every_point(run_cli: RunCli) -> None:
    want = _expected("8:256")
    cross = want.crossovers()[0]
    result = run_cli("sweep", PREFILL_HEAVY, "--vary", "cluster.gpus=8:256", "-f", "json",
                     exit_code=0)
    doc = json.loads(result.stdout)
    assert doc["kind"] == "sweep" and doc["schema_version"] == 1
    assert doc["axes"][0]["key"] == "cluster.gpus" and doc["axes"][0]["current"] == 1024
    assert len(doc["points"]) == doc["points_total"] == 249
    assert doc["crossover"] == [{"key": "cluster.gpus", "value": cross.value, "at": None,
                                 "from_start": cross.from_start,
                                 "stable_from": cross.stable_from}]
    first = doc["points"][0]
    assert first["cluster.gpus"] == 8 and first["verdict"] == str(want.verdict[0])
    assert first["deciding_rule"] == want.deciding((0,))
    assert set(first) >= {"colocated_goodput_per_gpu", "disaggregated_goodput_per_gpu",
                          "rounding_loss", "kv_utilization", "gain", "ideal_gain", "mix_loss",
                          "deciding_rule", "split", "colocated"}
    for point, i in zip(doc["points"], range(len(want.axes[0])), strict=True):
        assert point["verdict"] == str(want.verdict[i])
        assert point["deciding_rule"] == want.deciding((i,))
        assert point["rounding_loss"] == json_number(float(want["rounding_loss"][i]))
    assert doc["transitions"] == [{"at": want.axes[0].values[i], "verdict": v}
                                  for i, v in want.transitions()]


def test_csv_rows(run_cli: RunCli) -> None:
    result = run_cli("sweep", PREFILL_HEAVY, "--vary", "traffic.rate_rps=100,300,20000",
                     "--format", "csv", exit_code=0)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["traffic.rate_rps"] for r in rows] == ["100", "300", "20000"]
    want = sweep(scenario(PREFILL_HEAVY),
                 [axis_from_values("traffic.rate_rps", [100, 300, 20000])])
    assert [r["verdict"] for r in rows] == [str(v) for v in want.verdict]
    assert [float(r["kv_utilization"]) for r in rows] == want["kv_utilization"].tolist()
    assert [r["deciding_rule"] for r in rows] == [want.deciding((i,)) for i in range(3)]
    # 20,000 req/s is far beyond what 1,024 GPUs carry: the KV link is judged at the rate the
    # split carries (#14), the same as at any other rate beyond it, and does not fail
    assert "kv-bandwidth" not in rows[2]["failing"]
    assert float(rows[2]["kv_utilization"]) > float(rows[1]["kv_utilization"])


def test_a_grid_is_a_verdict_map(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "grid.txt"
    result = run_cli("sweep", PREFILL_HEAVY, "--vary", "cluster.gpus=16:1024:log:12",
                     "--vary", "cluster.inter_node=eth-25,ib-ndr-400", "-o", out, exit_code=0)
    assert f"wrote {out}" in result.stderr
    text = out.read_text()
    assert "verdict map: D = disaggregate" in text
    assert "crossover at cluster.inter_node = eth-25" in text
    assert "crossover at cluster.inter_node = ib-ndr-400" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--vary", "cluster.gpus"], "is not KEY=SPEC"),
    (["--vary", "cluster.gpu=8"], "cannot vary 'cluster.gpu'"),
    (["--vary", "cluster.gpus=64:8"], "low to high"),
    (["--vary", "cluster.inter_node=ib-ndr-4000"], "unknown interconnect profile"),
    (["--vary", "cluster.gpus=8", "--vary", "slo.tpot_ms=20", "--vary", "slo.ttft_ms=1"],
     "once (a line) or twice"),
    (["--vary", "cluster.gpus=8,16", "--vary", "cluster.gpus=32"], "varied twice"),
])
def test_bad_sweeps_exit_2(run_cli: RunCli, args: list[str], message: str) -> None:
    result = run_cli("sweep", PREFILL_HEAVY, *args, exit_code=2)
    assert message in result.stderr


def test_one_node_workload_cannot_grow_past_its_node(run_cli: RunCli) -> None:
    result = run_cli("sweep", EXAMPLES / "chat-8b-single-node.yaml", "--vary",
                     "cluster.gpus=4:16", exit_code=2)
    assert "no cluster.inter_node link" in result.stderr


def test_missing_workload_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("sweep", tmp_path / "nope.yaml", "--vary", "cluster.gpus=8", exit_code=2)
    assert "file not found" in result.stderr


def test_plot_without_matplotlib_says_how_to_get_it(run_cli: RunCli, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    png = tmp_path / "x.png"
    result = run_cli("sweep", PREFILL_HEAVY, "--vary", "cluster.gpus=8:64", "--plot", png,
                     exit_code=2)
    assert "pip install 'pd-advisor[plot]'" in result.stderr
    assert not png.exists() and result.stdout == ""


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert data.rstrip(b"\x00")[-8:-4] == b"IEND"
    return width, height


@pytest.mark.parametrize("grid", [False, True], ids=["line", "map"])
def test_plot_is_a_png_of_the_expected_size(run_cli: RunCli, tmp_path: Path, grid: bool) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    from advisor.render.plot import PIXELS

    png = tmp_path / "sweep.png"
    args = ["--vary", "cluster.gpus=8:512"]
    if grid:
        args += ["--vary", "traffic.rate_rps=50:5000:log:6"]
    result = run_cli("sweep", PREFILL_HEAVY, *args, "--plot", png, exit_code=0)
    assert f"wrote {png}" in result.stderr
    assert _png_size(png) == PIXELS == (1000, 700)
