"""A problem is always one line of printable text, with a key that reads unambiguously."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from advisor.loading.errors import InputProblem, one_line, shown_key
from advisor.render.junit import xml_safe


@pytest.mark.parametrize(("text", "shown"), [
    ("plain text: fine", "plain text: fine"),
    ("a\nb", "a\\nb"),
    ("line\u2028separator", "line\\u2028separator"),
    ("next\x85line", "next\\x85line"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("right\u202eto-left", "right\\u202eto-left"),
    ("tab\there", "tab\\there"),
    ("caf\u00e9 \u4e2d\u6587 \U0001f600", "caf\u00e9 \u4e2d\u6587 \U0001f600"),
])
def test_one_line_escapes_what_is_not_printable(text: str, shown: str) -> None:
    assert one_line(text) == shown


@pytest.mark.parametrize(("key", "shown"), [
    ("traffic.phases.0.share", "traffic.phases.0.share"),
    ("slo.my key", "slo.my key"),
    (" ", "' '"),
    ("cluster. gpus", "'cluster. gpus'"),
    ("cluster.", "'cluster.'"),
    ("a: b", "'a: b'"),
    ("ttft\nms", "'ttft\\nms'"),
])
def test_shown_key_quotes_ambiguous_keys(key: str, shown: str) -> None:
    assert shown_key(key) == shown


def test_problem_with_line_breaks_is_one_line() -> None:
    problem = InputProblem(path="w.yaml", line=3, col=5, key="slo.ttft\nms",
                           message="unknown key 'ttft\nms'")
    assert problem.format() == "w.yaml:3:5: error: 'slo.ttft\\nms': unknown key 'ttft\\nms'"


def test_xml_safe_keeps_xml_parsable() -> None:
    element = ET.Element("e", message=xml_safe("bad \x08 and \x00 and \ufffe; fine \u00e9\t"))
    parsed = ET.fromstring(ET.tostring(element, encoding="unicode"))
    assert parsed.get("message") == "bad \\x08 and \\x00 and \\ufffe; fine \u00e9\t"


def test_profile_errors_keep_one_line_per_problem() -> None:
    """A line break in a profile's path or reference cannot start a line of its own (#33):
    ``message`` keeps a message's own line breaks, so the values in it are escaped first."""
    from advisor.loading.profile_errors import ProfileInvalidError, ProfileNotFoundError

    error = ProfileInvalidError("p/a\nb\u202e.yaml", ["1:2: id: x\ny", "no position"])
    assert str(error).splitlines() == [
        "invalid profile p/a\\nb\\u202e.yaml:",
        "  p/a\\nb\\u202e.yaml:1:2: id: x\\ny",
        "  p/a\\nb\\u202e.yaml: no position",
    ]
    assert str(ProfileNotFoundError("gpus", "h\n100", [])).splitlines() == [
        "unknown GPU profile 'h\\n100' (see `pd-advisor profiles list gpus`)"]
