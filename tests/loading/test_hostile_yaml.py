"""Hostile YAML (issue #8, part 2): alias bombs, deep nesting, recursive aliases, tags, odd paths.

Every YAML file the CLI reads goes through :func:`read_yaml_text` and
:func:`compose_guarded`: workloads and ``.pd-advisor.yaml`` (``parse_yaml``), profiles and
calibration overlays (``catalog.load_yaml``). These tests pin the limits, show that the
iterative composer builds exactly PyYAML's node tree for ordinary files, and check that each
kind of file the CLI reads (also ``config.json`` and benchmark results) refuses hostile input
with a located message instead of hanging, crashing or tracing back. Timing and memory of
the real CLI are measured in ``tests/acceptance/test_hostile_input.py``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.loading.bench_results import BenchResultError, load_results
from advisor.loading.catalog import ProfileCatalog, ProfileInvalidError, load_yaml
from advisor.loading.errors import InputError
from advisor.loading.hf_config import load_hf_profile
from advisor.loading.resolve import load_scenario, read_document
from advisor.loading.yaml_source import (
    MAX_DEPTH,
    MAX_EXPANDED_NODES,
    MAX_YAML_BYTES,
    UnreadableFileError,
    YamlGuardError,
    compose_guarded,
    parse_yaml,
    read_yaml_text,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
BAD = REPO_ROOT / "tests" / "data" / "bad"
EXAMPLE = REPO_ROOT / "examples" / "chat-8b-single-node.yaml"
_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _problems(text: str) -> list[str]:
    with pytest.raises(InputError) as info:
        parse_yaml(text, "w.yaml")
    return [p.format() for p in info.value.problems]


def _compose(text: str, **limits: int) -> yaml.Node | None:
    loader = _LOADER(text)
    try:
        result = compose_guarded(loader, **limits)
        assert result.tag_errors == []
        return result.root
    finally:
        loader.dispose()


def _tree(node: yaml.Node | None, seen: dict[int, int] | None = None) -> Any:
    """A comparable picture of a node tree: tags, values, positions, and alias sharing."""
    seen = {} if seen is None else seen
    if node is None:
        return None
    if id(node) in seen:
        return ("alias-of", seen[id(node)])
    seen[id(node)] = len(seen)
    marks = (node.start_mark.line, node.start_mark.column, node.end_mark.line,
             node.end_mark.column)
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style, marks)
    if isinstance(node, yaml.SequenceNode):
        return ("seq", node.tag, node.flow_style, marks, [_tree(n, seen) for n in node.value])
    return ("map", node.tag, node.flow_style, marks,
            [(_tree(k, seen), _tree(v, seen)) for k, v in node.value])


# ---- the iterative composer is PyYAML's composer, plus limits ------------------------------
def _ordinary_files() -> list[Path]:
    files = sorted((REPO_ROOT / "examples").glob("*.yaml"))
    files += sorted((REPO_ROOT / "profiles").rglob("*.yaml"))
    files += sorted((REPO_ROOT / "tests" / "data").rglob("*.yaml"))
    hostile = {"alias-bomb.yaml", "merge-key-bomb.yaml", "recursive-alias.yaml",
               "custom-tag.yaml", "python-tag.yaml", "deep-nesting.yaml"}
    return [f for f in files if f.name not in hostile]


def test_same_tree_as_pyyaml_for_every_ordinary_file() -> None:
    """Examples, profiles and test data compose to the very tree PyYAML builds."""
    compared = 0
    for path in _ordinary_files():
        try:
            text = path.read_text(encoding="utf-8")
            expected = yaml.compose(text, Loader=_LOADER)
        except (UnicodeDecodeError, yaml.YAMLError):
            continue  # the malformed inputs: covered by the bad-input matrix
        assert _tree(_compose(text)) == _tree(expected), path
        compared += 1
    assert compared > 50


def test_aliases_and_merges_keep_pyyaml_semantics() -> None:
    text = "base: &b {mean: 1, p95: 2}\nx: *b\ny:\n  <<: *b\n  p95: 3\nz: [&s 1, *s]\n"
    assert _tree(_compose(text)) == _tree(yaml.compose(text, Loader=_LOADER))
    assert parse_yaml(text, "w.yaml").data == {
        "base": {"mean": 1, "p95": 2}, "x": {"mean": 1, "p95": 2},
        "y": {"mean": 1, "p95": 3}, "z": [1, 1]}


@pytest.mark.parametrize(("text", "message"), [
    ("a: *nope\n", "w.yaml:1:4: error: invalid YAML: found undefined alias 'nope'"),
    ("a: &x 1\nb: &x 2\n", ("w.yaml:2:4: error: invalid YAML: second occurrence (found duplicate "
                            "anchor 'x'; first occurrence at line 1)")),
    ("a: 1\n---\nb: 2\n", ("w.yaml:2:1: error: invalid YAML: but found another document "
                           "(expected a single document in the stream at line 1)")),
])
def test_pyyaml_composer_errors_are_kept(text: str, message: str) -> None:
    assert _problems(text) == [message]


# ---- alias expansion ------------------------------------------------------------------------
def test_expanded_node_count_is_exact() -> None:
    """Each alias counts every node it names: root, 'a', [1, 2], 'b', [*a, *a] = 13 nodes."""
    text = "a: &a [1, 2]\nb: [*a, *a]\n"
    assert _compose(text, max_nodes=13) is not None
    with pytest.raises(YamlGuardError) as info:
        _compose(text, max_nodes=12)
    assert (info.value.problem_mark.line, info.value.problem_mark.column) == (1, 8)
    assert info.value.key == "b.1"


def test_nested_aliases_multiply() -> None:
    """Aliases inside an anchored node are expanded every time that node is used."""
    text = "a: &a [1, 2]\nb: &b [*a, *a]\nc: [*b, *b]\n"  # a: 3 nodes, b: 7, c: 15
    total = 1 + (1 + 3) + (1 + 7) + (1 + 15)
    assert _compose(text, max_nodes=total) is not None
    with pytest.raises(YamlGuardError):
        _compose(text, max_nodes=total - 1)


def test_billion_laughs_is_refused_quickly() -> None:
    """9^9 strings once expanded; refused at the alias that crosses the limit, in milliseconds."""
    start = time.perf_counter()
    problems = _problems((BAD / "alias-bomb.yaml").read_text(encoding="utf-8"))
    assert time.perf_counter() - start < 1.0
    assert problems == [
        ("w.yaml:8:8: error: f.0: alias '*e' takes the document past 100,000 nodes once expanded "
        "(each use of an alias counts every node it stands for); refusing an alias bomb")]


def test_merge_key_bomb_is_refused_before_merging() -> None:
    """Merge keys copy pairs: unguarded, this 0.9 kB file takes minutes and gigabytes."""
    start = time.perf_counter()
    problems = _problems((BAD / "merge-key-bomb.yaml").read_text(encoding="utf-8"))
    assert time.perf_counter() - start < 1.0
    assert len(problems) == 1 and "refusing an alias bomb" in problems[0]


def test_large_flat_document_is_refused_at_the_node_limit() -> None:
    text = "a: [" + ", ".join(["1"] * MAX_EXPANDED_NODES) + "]\n"
    [problem] = _problems(text)
    assert problem.startswith("w.yaml:1:")
    assert problem.endswith(f"error: a.{MAX_EXPANDED_NODES - 3}: the document has more than "
                            "100,000 nodes")


# ---- nesting and recursion ------------------------------------------------------------------
def test_deep_nesting_is_refused_not_a_crash() -> None:
    """PyYAML's C composer recurses per level; 300,000 levels crash the interpreter."""
    text = "a: " + "[" * 300_000 + "]" * 300_000 + "\n"
    [problem] = _problems(text)
    # the guard's refusal at level 101 or, with PyYAML ≥ 6.0.4 wheels, the same refusal where
    # libyaml's own 1,000-level scanner limit stops first (see compose_guarded)
    assert problem in (f"w.yaml:1:{4 + MAX_DEPTH - 1}: error: a.0.0.0.0.0.0.0…: the document "
                       f"nests deeper than {MAX_DEPTH} levels",
                       f"w.yaml:1:1003: error: the document nests deeper than {MAX_DEPTH} levels")


def test_depth_limit_is_exact() -> None:
    deepest = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)  # under the root mapping
    assert parse_yaml(f"a: {deepest}\n", "w.yaml").problems == []
    assert "nests deeper" in _problems(f"a: [{deepest}]\n")[0]


def test_depth_counts_what_aliases_stand_for() -> None:
    # depth counts the nodes from the root to the deepest scalar: *a stands for 4 levels
    # (three lists and the scalar) and sits below the root mapping and two lists
    text = "a: &a [[[1]]]\nb: [[*a]]\n"
    assert _compose(text, max_depth=7) is not None
    with pytest.raises(YamlGuardError) as info:
        _compose(text, max_depth=6)
    assert "alias '*a' nests the document deeper than 6 levels" in info.value.message


@pytest.mark.parametrize(("text", "position"), [
    ("a: &a [*a]\n", "1:8"),
    ("a: &a {b: *a}\n", "1:11"),
    ("a: &a {<<: *a}\n", "1:12"),  # a merge into itself
    ("a: &a [x, [y, [*a]]]\n", "1:16"),
])
def test_recursive_aliases_are_refused(text: str, position: str) -> None:
    [problem] = _problems(text)
    assert problem.startswith(f"w.yaml:{position}: error: ")
    assert "alias '*a' refers to the node anchored '&a' that contains it" in problem


def test_alias_to_a_finished_sibling_is_not_recursive() -> None:
    assert parse_yaml("a: [&x [1], *x]\n", "w.yaml").data == {"a": [[1], [1]]}


# ---- tags -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [
    ("a: !!str 10\n", "10"), ("a: !!int '7'\n", 7), ("a: !!float 1\n", 1.0),
    ("a: !!bool true\n", True), ("a: !!null ''\n", None), ("a: !!seq [1]\n", [1]),
    ("a: !!map {b: 1}\n", {"b": 1}),
    ("a: ! 10\n", 10),  # the non-specific tag: resolved as PyYAML does
])
def test_plain_data_tags_are_allowed(text: str, value: Any) -> None:
    assert parse_yaml(text, "w.yaml").data == {"a": value}


@pytest.mark.parametrize(("tag", "shown"), [
    ("!foo", "!foo"), ("!!binary", "!!binary"), ("!!timestamp", "!!timestamp"),
    ("!!set", "!!set"), ("!!omap", "!!omap"),
    ("!<tag:example.com,2024:x>", "tag:example.com,2024:x"),
    ("!!python/object/apply:os.system", "!!python/object/apply:os.system"),
    ("!!python/name:os.system", "!!python/name:os.system"),
])
def test_other_tags_are_refused_with_their_position(tag: str, shown: str) -> None:
    [problem] = _problems(f"a:\n  b: {tag} x\n")
    assert problem.startswith(f"w.yaml:2:6: error: a.b: tag '{shown}' is not allowed")


def test_every_refused_tag_is_reported_at_once() -> None:
    problems = _problems("a: !x 1\nb: [1, !!python/object:os.system 2]\nc: !y {d: 1}\n")
    assert [p.split(": error: ")[0] for p in problems] == ["w.yaml:1:4", "w.yaml:2:8",
                                                           "w.yaml:3:4"]
    assert "Python objects are never loaded" in problems[1]


def test_python_payload_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"a: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(InputError):
        parse_yaml(text, "w.yaml")
    with pytest.raises(ProfileInvalidError):
        _write_and_load(tmp_path / "p.yaml", text)
    assert not marker.exists()


# ---- files ----------------------------------------------------------------------------------
def test_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    with pytest.raises(UnreadableFileError, match=r"^symbolic link loop: the path never reaches"):
        read_yaml_text(tmp_path / "a.yaml")


def test_broken_symlink(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(UnreadableFileError) as info:
        read_yaml_text(tmp_path / "w.yaml")
    assert info.value.message == f"file not found (broken symbolic link to '{tmp_path}/gone.yaml')"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match=r"^is a directory, not a file$"):
        read_yaml_text(tmp_path)


def test_huge_sparse_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A 4 GiB (sparse) file is refused after reading 1 MiB + 1 byte."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(4 * 1024**3)
    start = time.perf_counter()
    with pytest.raises(UnreadableFileError) as info:
        read_yaml_text(path)
    assert time.perf_counter() - start < 1.0
    assert info.value.message == ("file is too large (4,294,967,296 bytes); the limit is 1 MiB "
                                  f"({MAX_YAML_BYTES:,} bytes)")


# ---- every kind of file the CLI reads -------------------------------------------------------
def _write_and_load(path: Path, text: str) -> Any:
    path.write_text(text, encoding="utf-8")
    return load_yaml(path)


def _bomb_text() -> str:
    return (BAD / "merge-key-bomb.yaml").read_text(encoding="utf-8")


def test_profile_loader_refuses_bombs_tags_depth_and_size(tmp_path: Path) -> None:
    """``catalog.load_yaml`` (profiles, overlays) has the workload protections."""
    cases = {
        "bomb.yaml": (_bomb_text(), "8:33: YAML error: alias '*d' takes the document past"),
        "rec.yaml": ("a: &a [*a]\n", "1:8: YAML error: alias '*a' refers to the node"),
        "tag.yaml": ("id: !!python/name:os.system x\n",
                     "1:5: YAML error: tag '!!python/name:os.system' is not allowed"),
        "deep.yaml": ("a: " + "[" * 200_000 + "]" * 200_000, ("YAML error: the document "
                                                             "nests deeper than 100 levels")),
        "big.yaml": ("# padding\n" * 110_000, "1:1: file is too large (1,100,000 bytes)"),
    }
    for name, (text, start) in cases.items():
        with pytest.raises(ProfileInvalidError) as info:
            _write_and_load(tmp_path / name, text)
        problem = info.value.problems[0]
        if name == "deep.yaml":  # at level 101, or where libyaml ≥ 0.2.5 stops (1,000)
            assert problem in (f"1:103: {start}", f"1:1003: {start}"), problem
        else:
            assert problem.startswith(start), (name, info.value.problems)


def test_profile_loader_still_reads_profiles_and_rejects_duplicates(tmp_path: Path) -> None:
    assert _write_and_load(tmp_path / "ok.yaml", "a: &x {b: 1}\nc: *x\n") == {
        "a": {"b": 1}, "c": {"b": 1}}
    with pytest.raises(ProfileInvalidError) as info:
        _write_and_load(tmp_path / "dup.yaml", "a: 1\na: 2\n")
    assert info.value.problems == [
        ("2:1: YAML error: while constructing a mapping found duplicate key 'a' (first defined "
        "at line 1)")]


def _workload(tmp_path: Path, extra: str = "", model: str = "llama-3.1-8b") -> Path:
    text = EXAMPLE.read_text(encoding="utf-8").replace("model: llama-3.1-8b ",
                                                       f"model: {model} ")
    path = tmp_path / "workload.yaml"
    path.write_text(text + extra, encoding="utf-8")
    (tmp_path / ".git").mkdir(exist_ok=True)  # stop the .pd-advisor.yaml search here
    return path


def _located(exc: InputError) -> list[str]:
    return [f"{Path(p.path).name}:{p.line}:{p.col}: {p.message}" for p in exc.problems]


def test_project_config_bomb(tmp_path: Path) -> None:
    workload = _workload(tmp_path)
    (tmp_path / ".pd-advisor.yaml").write_text(_bomb_text(), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_scenario(workload, ProfileCatalog(env={}))
    [line] = _located(info.value)
    assert line.startswith(".pd-advisor.yaml:8:33: alias '*d' takes the document past")


def test_model_profile_path_bomb(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text(_bomb_text(), encoding="utf-8")
    workload = _workload(tmp_path, model="./model.yaml")
    with pytest.raises(InputError) as info:
        load_scenario(workload, ProfileCatalog(env={}))
    assert any(line.startswith("model.yaml:8:33: YAML error: alias '*d'")
               for line in _located(info.value)), _located(info.value)


def test_profiles_directory_from_environment(tmp_path: Path) -> None:
    """A profile found through PD_ADVISOR_PROFILES is guarded like any other."""
    gpus = tmp_path / "profiles" / "gpus"
    gpus.mkdir(parents=True)
    (gpus / "evil-gpu.yaml").write_text("id: !!python/object/apply:os.system ['true']\n",
                                        encoding="utf-8")
    catalog = ProfileCatalog(env={"PD_ADVISOR_PROFILES": str(tmp_path / "profiles")})
    with pytest.raises(ProfileInvalidError) as info:
        catalog.gpu("evil-gpu")
    assert info.value.problems == [
        ("1:5: YAML error: tag '!!python/object/apply:os.system' is not allowed: Python objects "
        "are never loaded; only plain data is read (strings, numbers, true/false, null, lists "
        "and mappings); remove the tag")]


def test_calibration_overlay_recursive_alias(tmp_path: Path) -> None:
    (tmp_path / "calibration.yaml").write_text("version: 1\nfit: &f {self: *f}\n",
                                               encoding="utf-8")
    workload = _workload(tmp_path, extra="calibration: calibration.yaml\n")
    with pytest.raises(InputError) as info:
        load_scenario(workload, ProfileCatalog(env={}))
    assert any(line.startswith("calibration.yaml:2:16: YAML error: alias '*f' refers to the")
               for line in _located(info.value)), _located(info.value)


def test_hf_config_limits(tmp_path: Path) -> None:
    """config.json: read at most 1 MiB (a 4 GiB sparse file is not read), deep JSON refused."""
    huge = tmp_path / "huge" / "config.json"
    huge.parent.mkdir()
    with huge.open("wb") as handle:
        handle.truncate(4 * 1024**3)
    start = time.perf_counter()
    with pytest.raises(ProfileInvalidError, match="larger than 1 MiB"):
        load_hf_profile(huge)
    assert time.perf_counter() - start < 1.0
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    with pytest.raises(ProfileInvalidError) as info:
        load_hf_profile(deep)
    assert info.value.problems == ["invalid JSON: nested too deeply; not a model config.json"]


def test_bench_results_deep_json(tmp_path: Path) -> None:
    deep = tmp_path / "bench.json"
    deep.write_text('{"a": ' * 200_000 + "1" + "}" * 200_000, encoding="utf-8")
    with pytest.raises(BenchResultError) as info:
        load_results(deep)
    assert info.value.message == ("invalid JSON at line 1: nested too deeply for a benchmark "
                                  "result")


def test_read_document_reports_links_and_directories(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    link_to_dir = tmp_path / "dir.yaml"
    link_to_dir.symlink_to(tmp_path)
    for path, message in ((tmp_path / "loop.yaml", "symbolic link loop"),
                          (link_to_dir, "is a directory, not a file")):
        with pytest.raises(InputError) as info:
            read_document(path)
        [problem] = info.value.problems
        assert (problem.line, problem.col) == (1, 1) and problem.message.startswith(message)


def test_limits_match_the_documented_values() -> None:
    """A tripwire: the docs quote these limits (1 MiB, 100,000 nodes, 100 levels)."""
    assert (MAX_YAML_BYTES, MAX_EXPANDED_NODES, MAX_DEPTH) == (1024 * 1024, 100_000, 100)
