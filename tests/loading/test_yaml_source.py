"""YAML parsing with positions: core-schema scalars, duplicate keys, locate(), syntax errors."""

from __future__ import annotations

import math

import pytest

from advisor.loading.errors import InputError
from advisor.loading.yaml_source import parse_yaml


def _problem(text: str) -> str:
    with pytest.raises(InputError) as info:
        parse_yaml(text, "w.yaml")
    assert len(info.value.problems) == 1
    return info.value.problems[0].format()


@pytest.mark.parametrize(("scalar", "value"), [
    ("true", True), ("False", False), ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"),
    ("y", "y"), ("~", None), ("null", None), ("", None), ("10", 10), ("-3", -3), ("+7", 7),
    ("010", 10), ("0o17", 15), ("0x1f", 31), ("1_000", "1_000"), ("12:30", "12:30"),
    ("1.5", 1.5), ("1e3", 1000.0), ("2.5E-1", 0.25), (".5", 0.5), ("1.", 1.0),
    ("2024-01-01", "2024-01-01"), ("'10'", "10"), ('"true"', "true"), ("bf16", "bf16"),
])
def test_scalars_follow_yaml_1_2_core_schema(scalar: str, value: object) -> None:
    data = parse_yaml(f"a: {scalar}\n", "w.yaml").data
    assert data == {"a": value}
    assert type(data["a"]) is type(value)


def test_special_floats() -> None:
    data = parse_yaml("a: .inf\nb: -.Inf\nc: .nan\n", "w.yaml").data
    assert data["a"] == math.inf and data["b"] == -math.inf and math.isnan(data["c"])


def test_keys_that_yaml_1_1_would_turn_into_booleans_stay_strings() -> None:
    assert parse_yaml("on: 1\nno: 2\n", "w.yaml").data == {"on": 1, "no": 2}


def test_duplicate_key_reported_at_second_occurrence_first_value_kept() -> None:
    doc = parse_yaml("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\na: 4\n", "w.yaml")
    assert [p.format() for p in doc.problems] == [
        "w.yaml:5:3: error: b: duplicate key 'c' (first defined at line 3)",
        "w.yaml:6:1: error: duplicate key 'a' (first defined at line 1)",
    ]
    assert doc.data == {"a": 1, "b": {"c": 1, "d": 2}}


def test_duplicate_key_inside_a_list_item() -> None:
    doc = parse_yaml("phases:\n  - {name: a, name: b}\n", "w.yaml")
    assert [p.format() for p in doc.problems] == [
        "w.yaml:2:15: error: phases.0: duplicate key 'name' (first defined at line 2)"]


def test_non_string_keys_are_reported_and_dropped() -> None:
    doc = parse_yaml("a:\n  1: x\n  null: y\n  true: z\n  '2': w\n? [k]\n: v\n", "w.yaml")
    assert [p.format() for p in doc.problems] == [
        ("w.yaml:2:3: error: a: key '1' is read as a number; keys must be strings "
        "(put it in quotes)"),
        ("w.yaml:3:3: error: a: key 'null' is read as null; keys must be strings "
        "(put it in quotes)"),
        ("w.yaml:4:3: error: a: key 'true' is read as a boolean; keys must be strings "
        "(put it in quotes)"),
        "w.yaml:6:3: error: keys must be plain strings, not lists or mappings",
    ]
    assert doc.data == {"a": {"2": "w"}}


def test_anchors_aliases_and_merge_keys() -> None:
    doc = parse_yaml("base: &b {mean: 1, p95: 2}\nx: *b\ny:\n  <<: *b\n  p95: 3\n", "w.yaml")
    assert doc.problems == []
    assert doc.data["x"] == {"mean": 1, "p95": 2}
    assert doc.data["y"] == {"mean": 1, "p95": 3}


def test_recursive_alias_is_refused() -> None:
    """A recursive alias has no finite expansion: refused at the alias, without hanging."""
    assert _problem("a: &a [*a]\n") == (
        "w.yaml:1:8: error: a.0: alias '*a' refers to the node anchored '&a' that contains it; "
        "recursive structures are not allowed")


TEXT = """\
version: 1
cluster:
  gpu: h100-sxm
  gpus: 8
traffic:
  phases:
    - name: day
      share: 0.5
    - {name: night, share: 0.5, prompt_tokens: {mean: 10, p95: 20}}
"""


@pytest.mark.parametrize(("loc", "at_key", "expected"), [
    ((), False, (1, 1)),
    (("version",), False, (1, 10)),
    (("version",), True, (1, 1)),
    (("cluster", "gpus"), False, (4, 9)),
    (("cluster", "gpus"), True, (4, 3)),
    (("cluster", "inter_node"), False, (3, 3)),  # missing key: the mapping that lacks it
    (("traffic", "phases", 0, "share"), False, (8, 14)),
    (("traffic", "phases", 1), False, (9, 7)),
    (("traffic", "phases", 1, "prompt_tokens", "p95"), False, (9, 64)),
    (("traffic", "phases", 7, "share"), False, (7, 5)),  # index out of range: the list
    (("traffic", "phases", "name"), False, (7, 5)),  # a key into a list: stop there
    (("version", "deeper"), False, (1, 10)),  # into a scalar: stop there
])
def test_locate(loc: tuple, at_key: bool, expected: tuple[int, int]) -> None:
    assert parse_yaml(TEXT, "w.yaml").locate(loc, at_key=at_key) == expected


def test_locate_in_empty_document() -> None:
    doc = parse_yaml("# nothing\n", "w.yaml")
    assert doc.root is None and doc.data is None
    assert doc.locate(("a",)) == (1, 1)


def test_syntax_error_position_and_context() -> None:
    assert _problem("a: {b: 1\nc: 2\n") == (
        "w.yaml:2:2: error: invalid YAML: did not find expected ',' or '}' "
        "(while parsing a flow mapping at line 1)")


def test_mapping_values_not_allowed() -> None:
    assert _problem("a: b: c\n") == (
        "w.yaml:1:5: error: invalid YAML: mapping values are not allowed in this context")


def test_tab_indentation() -> None:
    assert _problem("a:\n\tb: 1\n") == (
        "w.yaml:2:1: error: invalid YAML: tab character; YAML indentation must use spaces")


def test_control_character() -> None:
    assert _problem("a: 1\nb: x\x07\n") == (
        "w.yaml:2:5: error: invalid YAML: character U+0007 is not allowed "
        "(no control characters except tab and newline)")


def test_several_documents_are_refused() -> None:
    assert _problem("a: 1\n---\nb: 2\n").startswith("w.yaml:2:1: error: invalid YAML: ")


def test_python_tags_are_refused() -> None:
    assert _problem("a: !!python/object:os.system x\n") == (
        "w.yaml:1:4: error: a: tag '!!python/object:os.system' is not allowed: Python objects "
        "are never loaded; only plain data is read (strings, numbers, true/false, null, lists "
        "and mappings); remove the tag")


def test_explicit_int_tag_with_bad_value() -> None:
    assert _problem("a: !!int abc\n") == "w.yaml:1:4: error: invalid YAML: 'abc' is not an integer"
