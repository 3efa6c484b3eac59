"""YAML text to plain Python data, keeping every node's position.

PyYAML's defaults are wrong for a strictly validated input format, so this module:

* composes the node tree (``CSafeLoader`` when the C extension is present, else
  ``SafeLoader``) and builds plain data from it, so that any value can be traced back to a
  1-based ``line:col`` with :meth:`YamlDocument.locate`;
* rejects duplicate keys (PyYAML silently keeps the last one), reporting the second
  occurrence: ``duplicate key 'x' (first defined at line N)``; the first value is kept so the
  rest of the file can still be checked;
* rejects keys that are not strings (``1:``, ``null:``, ``true:``, ``? [a]``);
* resolves plain scalars with the YAML 1.2 core schema instead of YAML 1.1: only
  ``true``/``false`` are booleans (``yes``, ``no``, ``on``, ``off`` stay strings), ``010`` is
  ten, ``1e3`` is a number, ``1_000`` and ``12:30`` are strings, and dates are not parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import yaml

from advisor.loading.errors import InputError, InputProblem

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class _Core12Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader whose implicit scalar types follow the YAML 1.2 core schema."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}

    def construct_core_int(self, node: yaml.ScalarNode) -> int:
        """Construct a YAML 1.2 integer (decimal, ``0o`` octal, ``0x`` hex)."""
        text = str(self.construct_scalar(node))
        try:
            if text.startswith(("0o", "0x")):
                return int(text, 0)
            return int(text, 10)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is not an integer", node.start_mark) from None

    def construct_core_float(self, node: yaml.ScalarNode) -> float:
        """Construct a YAML 1.2 float (``1e3``, ``.5``, ``.inf``, ``.nan`` included)."""
        text = str(self.construct_scalar(node))
        lowered = text.lower()
        if lowered.endswith(".inf"):
            return -math.inf if lowered.startswith("-") else math.inf
        if lowered == ".nan":
            return math.nan
        try:
            return float(text)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is not a number", node.start_mark) from None


for _tag, _regexp, _first in (
    ("tag:yaml.org,2002:bool", _BOOL_RE, "tTfF"),
    ("tag:yaml.org,2002:null", _NULL_RE, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", _INT_RE, "-+0123456789"),
    ("tag:yaml.org,2002:float", _FLOAT_RE, "-+0123456789."),
    (_MERGE_TAG, re.compile(r"^<<$"), "<"),
):
    _Core12Loader.add_implicit_resolver(_tag, _regexp, list(_first))
_Core12Loader.add_constructor("tag:yaml.org,2002:int", _Core12Loader.construct_core_int)
_Core12Loader.add_constructor("tag:yaml.org,2002:float", _Core12Loader.construct_core_float)


@dataclass
class YamlDocument:
    """A parsed YAML file: plain data, the node tree it came from, and non-fatal problems."""

    path: str
    """The file as the user named it (used in problem reports)."""
    root: yaml.Node | None
    """The composed node tree; None for an empty document."""
    data: Any
    """Plain Python data (dicts, lists, str, int, float, bool, None)."""
    problems: list[InputProblem] = field(default_factory=list)
    """Problems that do not stop further checking (duplicate or non-string keys)."""

    def locate(self, loc: Sequence[str | int], *, at_key: bool = False) -> tuple[int, int]:
        """The 1-based ``(line, col)`` of the value at ``loc`` (a pydantic-style path).

        The walk stops at the deepest node that exists: for a missing key this is the
        mapping that should contain it. With ``at_key`` the position of the last key itself
        is returned instead of its value (for unknown keys).
        """
        node = self.root
        if node is None:
            return (1, 1)
        for index, part in enumerate(loc):
            last = index == len(loc) - 1
            child: yaml.Node | None = None
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part):
                        child = key_node if (last and at_key) else value_node
                        break
            elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
                  and 0 <= part < len(node.value)):
                child = node.value[part]
            if child is None:
                break
            node = child
        return node_position(node)


def node_position(node: yaml.Node) -> tuple[int, int]:
    """1-based ``(line, col)`` where ``node`` starts."""
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def parse_yaml(text: str, path: str) -> YamlDocument:
    """Parse one YAML document; raise :class:`InputError` if it is not well-formed YAML.

    Duplicate and non-string keys do not raise: they are listed in
    :attr:`YamlDocument.problems` (the first value of a duplicate is kept, non-string keys
    are dropped) so the caller can report them together with everything else.
    """
    loader = _Core12Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise InputError([_syntax_problem(path, exc, text)]) from None
        except yaml.reader.ReaderError as exc:
            line, col = _position_of(text, exc.position)
            raise InputError([InputProblem(
                path, line, col, "", f"invalid YAML: {_codepoint(exc.character)} is not allowed "
                                     "(no control characters except tab and newline)")]) from None
        except yaml.YAMLError as exc:
            raise InputError([InputProblem(path, 1, 1, "", f"invalid YAML: {exc}")]) from None
        problems: list[InputProblem] = []
        if root is not None:
            _check_keys(root, path, problems, set())
        try:
            data = loader.construct_document(root) if root is not None else None
        except yaml.MarkedYAMLError as exc:
            raise InputError([_syntax_problem(path, exc, text)]) from None
        except (ValueError, TypeError) as exc:
            raise InputError([InputProblem(
                path, 1, 1, "", f"cannot read YAML value: {exc}")]) from None
    finally:
        loader.dispose()
    return YamlDocument(path=path, root=root, data=data, problems=problems)


def _codepoint(character: int | str) -> str:
    """``U+0007`` for a character or its code."""
    code = character if isinstance(character, int) else ord(character)
    return f"character U+{code:04X}"


def _position_of(text: str, index: int) -> tuple[int, int]:
    """1-based ``(line, col)`` of a character offset in ``text``."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return (line, index - (text.rfind("\n", 0, index) + 1) + 1)


def _syntax_problem(path: str, exc: yaml.MarkedYAMLError, text: str) -> InputProblem:
    """Turn a PyYAML error into a problem at its ``problem_mark`` (or ``context_mark``)."""
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    message = f"invalid YAML: {exc.problem or exc.context or 'syntax error'}"
    lines = text.splitlines()
    if (mark is not None and mark.line < len(lines) and mark.column < len(lines[mark.line])
            and lines[mark.line][mark.column] == "\t"):
        message = "invalid YAML: tab character; YAML indentation must use spaces"
        return InputProblem(path, line, col, "", message)
    if exc.context and exc.problem and exc.context_mark is not None:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return InputProblem(path, line, col, "", message)


_TAG_NAMES = {"tag:yaml.org,2002:int": "a number", "tag:yaml.org,2002:float": "a number",
              "tag:yaml.org,2002:bool": "a boolean", "tag:yaml.org,2002:null": "null"}


def _check_keys(node: yaml.Node, path: str, problems: list[InputProblem],
                seen: set[int], keys: tuple[str, ...] = ()) -> None:
    """Report and remove duplicate and non-string keys, recursively.

    The first occurrence of a duplicate key is kept; keys that are not strings (``1:``,
    ``null:``, ``? [a]``) are dropped so later checks do not report them again.
    """
    if id(node) in seen:  # aliases share nodes (and may be recursive)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        kept: list[tuple[yaml.Node, yaml.Node]] = []
        where = ".".join(keys)
        for key_node, value_node in node.value:
            line, col = node_position(key_node)
            if key_node.tag == _MERGE_TAG:
                kept.append((key_node, value_node))
                _check_keys(value_node, path, problems, seen, keys)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(InputProblem(path, line, col, where,
                                             "keys must be plain strings, not lists or mappings"))
                continue
            name = str(key_node.value)
            if key_node.tag != _STR_TAG:
                kind = _TAG_NAMES.get(key_node.tag, key_node.tag)
                problems.append(InputProblem(path, line, col, where,
                                             f"key '{name}' is read as {kind}; keys must be "
                                             "strings (put it in quotes)"))
                continue
            if name in first_line:
                problems.append(InputProblem(
                    path, line, col, where,
                    f"duplicate key '{name}' (first defined at line {first_line[name]})"))
                continue
            first_line[name] = line
            kept.append((key_node, value_node))
            _check_keys(value_node, path, problems, seen, (*keys, name))
        node.value = kept
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check_keys(item, path, problems, seen, (*keys, str(index)))
