"""The column-wise CSV writer (#34) against the row-by-row ``csv`` writer it replaced: the
same bytes on 1-D sweeps and grids of open-loop, three-phase and closed-loop workloads, link
axes, a GPU price and a chunk boundary."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.core.analysis.sweep import SweepResult, sweep
from advisor.core.verdict.rules import VERDICTS
from advisor.loading.sweep_spec import axis_from_vary, make_axis
from advisor.render import sweep_report as rep
from tests.sweep.helpers import EXAMPLES, THREE_PHASE, catalog, scenario


def reference_csv(result: SweepResult) -> str:
    """The row-by-row writer of pd-advisor 0.1.0 before #34 (``csv.writer``, one point at
    a time), kept verbatim as the reference."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([a.key for a in result.axes] + list(rep.COLUMNS))
    m = result.metrics
    for idx in _indices(result):
        row: list[Any] = [rep._value(a.values[i]) for a, i in zip(result.axes, idx, strict=True)]
        for name in rep.COLUMNS:
            if name == "verdict":
                row.append(VERDICTS[int(m["disaggregate"][idx])])
            elif name == "deciding_rule":
                row.append(result.deciding(idx))
            elif name == "failing":
                row.append(";".join(result.failing(idx)))
            else:
                v = m[name][idx]
                if isinstance(v, (np.bool_, bool)):
                    row.append("true" if v else "false")
                elif isinstance(v, (np.integer, int)):
                    row.append(int(v))
                else:
                    f = float(v)
                    row.append(repr(f) if math.isfinite(f) else "")
        w.writerow(row)
    return buf.getvalue()


def _indices(result: SweepResult) -> Iterator[tuple[int, ...]]:
    return (tuple(int(i) for i in idx) for idx in np.ndindex(*result.shape))


CASES = [
    ("chat-8b-single-node.yaml", (("cluster.gpus", "1:8"),)),
    ("prefill-heavy-70b-ib.yaml", (("cluster.gpus", "8:600"),)),  # > one chunk of rows
    ("prefill-heavy-70b-ib.yaml", (("cluster.gpus", "8:256:log:9"),
                                   ("traffic.rate_rps", "1:400:log:7"))),
    ("prefill-heavy-70b-ib.yaml", (("cluster.inter_node", "ib-ndr-400,roce-100,eth-25"),
                                   ("cluster.gpus", "16,32,64"))),
    ("day-night-shift.yaml", (("traffic.rate_rps", "0.5:200:log:40"),)),
    ("agents-70b-closed-loop.yaml", (("traffic.concurrency", "8,64,512"),)),
    ("deepseek-v3-96xh100.yaml", (("slo.tpot_ms", "20,60"), ("cluster.gpus", "64,96,128"))),
    (None, (("cluster.gpus", "64:4096:log:50"), ("traffic.prompt_tokens", "500,4000"))),
]


@pytest.mark.parametrize(("name", "vary"), CASES, ids=[f"{c[0]}-{len(c[1])}d" for c in CASES])
def test_column_writer_bytes_equal_the_row_writer(name: str | None,
                                                  vary: tuple[tuple[str, str], ...]) -> None:
    path = THREE_PHASE if name is None else EXAMPLES / name
    sc = scenario(Path(path))
    axes = [axis_from_vary(f"{key}={spec}", catalog().link) for key, spec in vary]
    result = sweep(sc, axes)
    text = rep.render_csv(result)
    assert text == reference_csv(result)
    assert text.count("\n") == result.size + 1


def test_column_writer_quotes_and_non_finite_values() -> None:
    """Fields the csv module quotes, NaN and infinities, the gain flag and a price."""
    sc = scenario(EXAMPLES / "prefill-heavy-70b-ib.yaml")
    result = sweep(sc, [make_axis("cluster.gpus", "8,16,24")])
    metrics = dict(result.metrics)
    gain = np.array(metrics["gain"], dtype=float)
    gain[0], gain[1] = np.nan, np.inf
    metrics["gain"] = gain
    odd = SweepResult(workload=result.workload, axes=result.axes, metrics=metrics,
                      policy=result.policy)
    assert rep.render_csv(odd) == reference_csv(odd)
    assert rep._csv_fields(['a,b', 'say "x"', "plain", 3, 2.5]).tolist() == [
        '"a,b"', '"say ""x"""', "plain", "3", "2.5"]


def test_column_writer_pieces_join_to_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few rows (the header in the first) join to the row writer's text, and
    -0.0 keeps its sign beside 0.0 in one piece."""
    sc = scenario(THREE_PHASE)
    result = sweep(sc, [make_axis("cluster.gpus", "64:512:log:6"),
                        make_axis("traffic.rate_rps", "10,100,1000")])
    metrics = dict(result.metrics)
    loss = np.array(metrics["rounding_loss"], dtype=float)
    loss.flat[0], loss.flat[1] = -0.0, 0.0
    metrics["rounding_loss"] = loss
    odd = SweepResult(workload=result.workload, axes=result.axes, metrics=metrics,
                      policy=result.policy)
    monkeypatch.setattr(rep, "CSV_CHUNK_POINTS", 5)
    pieces = list(rep.csv_chunks(odd))
    assert len(pieces) == 4 and pieces[0].startswith("cluster.gpus,traffic.rate_rps,verdict,")
    assert "".join(pieces) == reference_csv(odd)
    assert ",-0.0," in pieces[0]
