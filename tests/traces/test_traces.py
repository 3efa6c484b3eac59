"""Reading request logs (advisor.loading.traces): every format, and every way a log can be bad.

The logs are made here (tests/traces/planted.py): a few thousand rows in each format with a
rate step and a mix shift planted. Bad logs must give ``path:line:col: error: ...`` for every
problem, never a traceback, and nothing else.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from advisor.loading import traces
from advisor.loading.errors import InputError
from advisor.loading.traces import MAX_TRACE_BYTES, load_trace, load_traces, sniff_format
from tests.traces.planted import make, write

FORMATS = {"mooncake": "jsonl", "azure": "csv", "burstgpt": "csv", "vllm-bench": "json"}


@pytest.fixture(scope="module")
def planted():
    return make()


@pytest.fixture(scope="module")
def files(planted, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("logs")
    return {fmt: write(planted, fmt, root / f"log-{fmt}.{ext}") for fmt, ext in FORMATS.items()}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_reads_back_the_requests(fmt: str, files: dict[str, Path],
                                              planted) -> None:
    assert sniff_format(files[fmt]) == fmt
    log = load_trace(files[fmt])
    assert log.format == fmt and log.requests == planted.prompt.size
    assert np.array_equal(log.prompt_tokens, planted.prompt)
    assert np.array_equal(log.output_tokens, planted.output)
    assert log.arrival_s[0] == 0.0 and np.all(np.diff(log.arrival_s) >= 0)
    # timestamps: ms (mooncake), 100 ns (azure), ms (burstgpt as written), s (vllm)
    span = planted.arrival_s[-1] - planted.arrival_s[0]
    assert log.arrival_s[-1] == pytest.approx(span, abs=2e-3)
    assert (log.prefix_hit_blocks is not None) == (fmt == "mooncake")
    assert (log.start_epoch_s is not None) == (fmt == "azure")


def test_time_scale_stretches_the_clock(files: dict[str, Path]) -> None:
    one = load_trace(files["burstgpt"])
    half = load_trace(files["burstgpt"], time_scale=0.5)
    assert half.arrival_s[-1] == pytest.approx(one.arrival_s[-1] / 2)


def test_logs_join_one_after_another(files: dict[str, Path]) -> None:
    one = load_trace(files["burstgpt"])
    both = load_traces([files["burstgpt"], files["vllm-bench"]])
    assert both.requests == 2 * one.requests
    assert both.arrival_s[-1] > 2 * one.arrival_s[-1]
    assert np.all(np.diff(both.arrival_s) >= 0)


def _problems(path: Path, fmt: str = "auto") -> list[str]:
    with pytest.raises(InputError) as info:
        load_trace(path, fmt)
    lines = [p.format() for p in info.value.problems]
    for line in lines:
        assert line.startswith(f"{path}:"), line
        assert ": error: " in line
    return lines


def test_malformed_mooncake_rows_are_all_reported(tmp_path: Path) -> None:
    good = {"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}
    rows = [json.dumps(good), "this is not json",
            json.dumps({**good, "timestamp": 10, "input_length": -5}),
            json.dumps({**good, "timestamp": 20, "output_length": 0}),
            json.dumps({"timestamp": 30, "input_length": 10}),
            json.dumps({**good, "timestamp": "soon"}),
            json.dumps({**good, "timestamp": 40, "input_length": 2.5}),
            json.dumps({**good, "timestamp": 50, "hash_ids": ["a"]}),
            '{"timestamp": 60, "input_length": 1e400, "output_length": 5}',
            "[" * 100_000 + "]" * 100_000,
            '{"timestamp": 70, "input_length": ' + "9" * 5000 + ', "output_length": 5}',
            json.dumps([1, 2, 3])]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    lines = _problems(path, "mooncake")
    assert [int(line.split(":")[1]) for line in lines] == list(range(2, 13))
    text = "\n".join(lines)
    assert "2:1: error: not a JSON object" in text
    assert "input_length: -5 prompt tokens" in text
    assert "output_length: 0 output tokens" in text and "failed request" in text
    assert "output_length: missing" in text
    assert "timestamp: expected a number" in text
    assert "hash_ids: expected a list of integers" in text


def test_wrong_columns_name_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    path.write_text("time,in,out\n2023-11-16 18:00:00,10,5\n", encoding="utf-8")
    (line,) = _problems(path, "azure")
    assert line.startswith(f"{path}:1:1: error: missing columns TIMESTAMP, ContextTokens, "
                           "GeneratedTokens")
    assert "'time'" in line
    (auto,) = _problems(path)
    assert "cannot tell the log's format" in auto


def test_non_monotone_timestamps_and_zero_outputs(tmp_path: Path) -> None:
    path = tmp_path / "burst.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                    "5,ChatGPT,100,20,120,Conversation log\n"
                    "4,ChatGPT,100,20,120,Conversation log\n"
                    "6,ChatGPT,100,0,100,Conversation log\n"
                    "7,ChatGPT,nan,20,120,Conversation log\n"
                    "8,ChatGPT,100\n", encoding="utf-8")
    lines = _problems(path, "burstgpt")
    assert lines[0].startswith(f"{path}:3:1: error: Timestamp: 4 is earlier than the previous "
                               "request's 5 (line 2)")
    assert lines[1].startswith(f"{path}:4:1: error: Response tokens: 0 output tokens")
    assert lines[2].startswith(f"{path}:5:1: error: Request tokens: expected a whole number")
    assert lines[3].startswith(f"{path}:6:1: error: 3 fields")


def test_azure_timestamps_must_be_dates(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,20\n"
                    "yesterday,100,20\n"
                    "2023-13-45 18:15:46,100,20\n", encoding="utf-8")
    lines = _problems(path)
    assert [line.split(":")[1] for line in lines] == ["3", "4"]
    assert "TIMESTAMP: expected a date and time" in lines[0]


def test_vllm_result_without_per_request_arrays(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"num_prompts": 4, "request_throughput": 1.0,
                                "mean_ttft_ms": 50.0}), encoding="utf-8")
    (line,) = _problems(path)
    assert "start_times: missing" in line and "--save-detailed" in line
    path.write_text(json.dumps({"start_times": [0.0, 1.0], "input_lens": [10, 10],
                                "output_lens": [0, 5], "errors": ["timeout", ""]}),
                    encoding="utf-8")
    (line,) = _problems(path, "vllm-bench")
    assert "output_lens[0]: 0 output tokens: the request failed ('timeout')" in line
    path.write_text('{"start_times": [0.0, 1.0], "input_lens": [10, 10], "output_lens": [5',
                    encoding="utf-8")
    (line,) = _problems(path, "vllm-bench")
    assert "not a vllm bench serve result" in line


def test_a_64_mib_plus_one_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(MAX_TRACE_BYTES + 1)  # sparse: nothing to read, stat says 64 MiB + 1
    (line,) = _problems(path, "mooncake")
    assert line.startswith(f"{path}:1:1: error: the log is 67,108,865 bytes; logs are limited "
                           "to 67,108,864 bytes (64 MiB)")
    exact = tmp_path / "exact.jsonl"
    # 64 MiB exactly is accepted and streamed: 4,096-block prompts, every row a new prefix
    rows = []
    size = 0
    start = 0
    while True:
        ids = list(range(start, start + 4096))
        row = (json.dumps({"timestamp": len(rows), "input_length": 4096 * 512,
                           "output_length": 100, "hash_ids": ids}) + "\n").encode()
        if size + len(row) > MAX_TRACE_BYTES:
            break
        rows.append(row)
        size += len(row)
        start += 2048  # half of each prompt repeats the previous one's blocks
    with exact.open("wb") as handle:
        handle.write(b"".join(rows) + b" " * (MAX_TRACE_BYTES - size - 1) + b"\n")
    assert exact.stat().st_size == MAX_TRACE_BYTES
    log = load_trace(exact, "mooncake")
    assert log.requests == len(rows)
    assert log.prefix_hit_blocks is not None
    # each prompt starts with the previous one's second half
    assert list(log.prefix_hit_blocks[:3]) == [0, 2048, 2048]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_stream_past_the_limit_is_refused_while_reading(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe has no size up front: reading stops one byte past the limit."""
    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 4096)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    row = (json.dumps({"timestamp": 0, "input_length": 1, "output_length": 1}) + "\n").encode()

    def feed() -> None:
        try:
            with fifo.open("wb") as handle:
                handle.write(row * 1000)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    (line,) = _problems(fifo, "mooncake")
    writer.join(timeout=10)
    assert "logs are limited to 4,096 bytes" in line


def test_binary_garbage_and_devices(tmp_path: Path) -> None:
    path = tmp_path / "noise.jsonl"
    path.write_bytes(bytes(range(256)) * 10)
    assert _problems(path)  # no format recognised
    lines = _problems(path, "mooncake")
    assert any("not UTF-8 text" in line or "not a JSON object" in line for line in lines)
    if Path("/dev/zero").exists():
        (line,) = _problems(Path("/dev/zero"), "mooncake")  # read once, to the limit (#33)
        assert "the log is more than 67,108,864 bytes" in line
    assert _problems(tmp_path)[0].endswith("is a directory, not a file")
    assert _problems(tmp_path / "missing.csv", "azure")[0].endswith(":1:1: error: file not found")


def test_problems_stop_at_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text("junk\n" * 10_000, encoding="utf-8")
    lines = _problems(path, "mooncake")
    assert len(lines) == traces.MAX_PROBLEMS + 1
    assert lines[-1].endswith(f"stopped after {traces.MAX_PROBLEMS} problems")
