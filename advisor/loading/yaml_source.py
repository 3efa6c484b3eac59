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

Hostile input. Every YAML file pd-advisor reads (workloads, ``.pd-advisor.yaml``, profiles,
calibration overlays) is read by :func:`read_yaml_text` and composed by
:func:`compose_guarded`, which replaces PyYAML's recursive composer with an iterative one
that refuses, with the position of the offending node:

* files larger than :data:`MAX_YAML_BYTES` (1 MiB), before reading them in full;
* documents that would expand to more than :data:`MAX_EXPANDED_NODES` nodes, counting each
  use of an alias (``*a``, also in a ``<<:`` merge) as a full copy of what it names: PyYAML
  shares aliased nodes, but merge keys, validation and any walk over the data see the
  expanded tree, so a few hundred bytes of nested aliases ("billion laughs") would otherwise
  take minutes and gigabytes;
* nesting deeper than :data:`MAX_DEPTH` levels (again counting what aliases stand for):
  PyYAML's C composer recurses once per level and crashes the interpreter on a deeply
  nested file;
* recursive aliases (``&a [*a]``), which have no finite expansion;
* explicit tags other than the plain-data ones (``!!str``, ``!!int``, ``!!float``,
  ``!!bool``, ``!!null``, ``!!seq``, ``!!map``): custom tags (``!foo``) and Python object
  tags (``!!python/object/apply:...``) are never constructed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from advisor.core.limits import MAX_YAML_DEPTH, MAX_YAML_FILE_BYTES, MAX_YAML_NODES
from advisor.loading.errors import InputError, InputProblem
from advisor.loading.input_file import UnreadableFileError as UnreadableFileError
from advisor.loading.input_file import read_input

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
_STANDARD_TAG_PREFIX = "tag:yaml.org,2002:"

MAX_YAML_BYTES = MAX_YAML_FILE_BYTES
MAX_EXPANDED_NODES = MAX_YAML_NODES
MAX_DEPTH = MAX_YAML_DEPTH

PLAIN_DATA_TAGS: frozenset[str] = frozenset(
    _STANDARD_TAG_PREFIX + name for name in ("str", "int", "float", "bool", "null", "seq", "map",
                                             "merge"))
"""The only tags a document may name explicitly (``!!str 10``); anything else is refused."""


# Ignored below: the base is chosen at run time (CSafeLoader when libyaml is there), a variable of
# type `type`.
class _Core12Loader(_BaseLoader):  # type: ignore[misc]
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


@dataclass(kw_only=True)
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
    sha256: str = ""
    """SHA-256 of the file's bytes as they were read (#33: a pipe's too); empty for a document
    parsed from text."""

    def locate(self, loc: Sequence[str | int], *, at_key: bool = False) -> tuple[int, int]:
        """The 1-based ``(line, col)`` of the value at ``loc`` (a pydantic-style path).

        The walk stops at the deepest node that exists: for a missing key this is the
        mapping that should contain it. With ``at_key`` the position of the last key itself
        is returned instead of its value (for unknown keys).
        """
        node = self.node(loc, at_key=at_key)
        return (1, 1) if node is None else node_position(node)

    def node(self, loc: Sequence[str | int], *, at_key: bool = False) -> yaml.Node | None:
        """The deepest node along ``loc`` (see :meth:`locate`); None for an empty document."""
        node = self.root
        if node is None:
            return None
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
        return node


def node_position(node: yaml.Node) -> tuple[int, int]:
    """1-based ``(line, col)`` where ``node`` starts."""
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def parse_yaml(text: str, path: str) -> YamlDocument:
    """Parse one YAML document; raise :class:`InputError` if it is not well-formed YAML.

    Duplicate and non-string keys do not raise: they are listed in
    :attr:`YamlDocument.problems` (the first value of a duplicate is kept, non-string keys
    are dropped) so the caller can report them together with everything else.
    """
    [document] = _parse(text, path, stream=False)
    return document


def parse_yaml_stream(text: str, path: str) -> list[YamlDocument]:
    """Every document of a ``---``-separated stream (Kubernetes manifests), each parsed as
    :func:`parse_yaml` parses one, under the same guards (node and depth limits count per
    document; the file-size limit bounds the stream). Empty documents are kept (``data``
    None) so that document indices match ``kubectl``'s."""
    return _parse(text, path, stream=True)


def _parse(text: str, path: str, stream: bool) -> list[YamlDocument]:
    loader = _Core12Loader(text)
    documents: list[YamlDocument] = []
    try:
        try:
            roots = _compose_stream(loader) if stream else [compose_guarded(loader)]
        except YamlGuardError as exc:
            raise InputError([_guard_problem(path, exc)]) from None
        except yaml.MarkedYAMLError as exc:
            raise InputError([_syntax_problem(path, exc, text)]) from None
        except yaml.reader.ReaderError as exc:
            line, col = _position_of(text, exc.position)
            raise InputError([InputProblem(
                path=path, line=line, col=col, key="",
                message=f"invalid YAML: {_codepoint(exc.character)} is not allowed "
                                     "(no control characters except tab and newline)")]) from None
        except yaml.YAMLError as exc:
            raise InputError([InputProblem(path=path, line=1, col=1, key="",
                                           message=f"invalid YAML: {exc}")]) from None
        tag_errors = [error for composed in roots for error in composed.tag_errors]
        if tag_errors:
            raise InputError([_guard_problem(path, exc) for exc in tag_errors])
        for composed in roots:
            root = composed.root
            problems: list[InputProblem] = []
            if root is not None:
                _check_keys(root, path, problems, set())
            try:
                data = loader.construct_document(root) if root is not None else None
            except yaml.MarkedYAMLError as exc:
                raise InputError([_syntax_problem(path, exc, text)]) from None
            except (ValueError, TypeError) as exc:
                raise InputError([InputProblem(
                    path=path, line=1, col=1, key="",
                    message=f"cannot read YAML value: {exc}")]) from None
            documents.append(YamlDocument(path=path, root=root, data=data, problems=problems))
    finally:
        loader.dispose()
    return documents


def _compose_stream(loader: Any) -> list[ComposedDocument]:
    """Every document of the stream, composed under :func:`compose_guarded`'s limits."""
    loader.get_event()  # stream start
    out: list[ComposedDocument] = []
    while not loader.check_event(yaml.StreamEndEvent):
        tag_errors: list[YamlGuardError] = []
        try:
            root = _compose_document(loader, MAX_EXPANDED_NODES, MAX_DEPTH, tag_errors)
        except yaml.scanner.ScannerError as exc:  # libyaml's own depth limit (compose_guarded)
            if "maximum nesting depth" not in str(exc.problem):
                raise
            raise YamlGuardError(f"the document nests deeper than {MAX_DEPTH} levels",
                                 exc.problem_mark, "") from None
        out.append(ComposedDocument(root=root, tag_errors=tag_errors))
    loader.get_event()  # stream end
    return out


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
        return InputProblem(path=path, line=line, col=col, key="", message=message)
    if exc.context and exc.problem and exc.context_mark is not None:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return InputProblem(path=path, line=line, col=col, key="", message=message)


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
                problems.append(InputProblem(path=path, line=line, col=col, key=where,
                                             message=("keys must be plain strings, not lists "
                                                      "or mappings")))
                continue
            name = str(key_node.value)
            if key_node.tag != _STR_TAG:
                kind = _TAG_NAMES.get(key_node.tag, key_node.tag)
                problems.append(InputProblem(path=path, line=line, col=col, key=where,
                                             message=(f"key '{name}' is read as {kind}; keys "
                                                      "must be strings (put it in quotes)")))
                continue
            if name in first_line:
                problems.append(InputProblem(
                    path=path, line=line, col=col, key=where,
                    message=f"duplicate key '{name}' (first defined at line {first_line[name]})"))
                continue
            first_line[name] = line
            kept.append((key_node, value_node))
            _check_keys(value_node, path, problems, seen, (*keys, name))
        node.value = kept
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check_keys(item, path, problems, seen, (*keys, str(index)))


# --------------------------------------------------------------------------- reading files
def read_yaml_bytes(path: Path, limit_bytes: int = MAX_YAML_BYTES, *,
                    regular_only: bool = False) -> bytes:
    """The bytes of a YAML file, read once (:func:`advisor.loading.input_file.read_input`: at
    most ``limit_bytes``, a pipe read whole; ``regular_only`` for files found by listing a
    directory), or :class:`UnreadableFileError` saying why not."""
    return read_input(path, limit_bytes, regular_only=regular_only)


def yaml_text(raw: bytes) -> str:
    """The text of a YAML file's bytes (a UTF-8 byte-order mark dropped), or
    :class:`UnreadableFileError` at the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UnreadableFileError(f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                                  f"offset {exc.start})", line, col) from None


def read_yaml_text(path: Path, limit_bytes: int = MAX_YAML_BYTES, *,
                   regular_only: bool = False) -> str:
    """The text of a YAML file, or :class:`UnreadableFileError` saying why not.

    At most ``limit_bytes + 1`` bytes are read, so a huge file costs no time or memory. A
    path that does not lead to a file (missing, a broken symbolic link, a symbolic-link loop,
    a directory) is named as such. A UTF-8 byte-order mark is dropped.
    """
    return yaml_text(read_yaml_bytes(path, limit_bytes, regular_only=regular_only))


# --------------------------------------------------------------------------- guarded composing
class YamlGuardError(yaml.MarkedYAMLError):
    """A document refused by a guard of :func:`compose_guarded` (size, depth, recursion, tag).

    A :class:`yaml.MarkedYAMLError`, so callers that report PyYAML errors with their
    position report these too; ``key`` is the dotted path of the offending node.
    """

    def __init__(self, message: str, mark: Any, key: str) -> None:
        super().__init__(None, None, message, mark)
        self.message = message
        self.key = key


@dataclass
class ComposedDocument:
    """The result of :func:`compose_guarded`."""

    root: yaml.Node | None
    """The node tree (None for an empty stream)."""
    tag_errors: list[YamlGuardError]
    """One error per node with a refused explicit tag; construct nothing when non-empty."""


@dataclass
class _Anchor:
    """What an anchor names, and its size once every alias inside it is expanded."""

    node: yaml.Node
    expanded_nodes: int = 1
    height: int = 1
    open: bool = True
    """Still being composed: an alias to it now would be recursive."""


@dataclass(kw_only=True)
class _Frame:
    """A collection being composed."""

    node: yaml.SequenceNode | yaml.MappingNode
    anchor: _Anchor | None
    expanded_nodes: int = 1
    height: int = 1
    key: yaml.Node | None = None
    """Mapping only: the key whose value comes next."""
    has_key: bool = False


def compose_guarded(loader: Any, *, max_nodes: int = MAX_EXPANDED_NODES,
                    max_depth: int = MAX_DEPTH) -> ComposedDocument:
    """Compose the single document of ``loader``'s stream, iteratively and with limits.

    Builds the same node tree as PyYAML's ``get_single_node`` (``loader`` is any PyYAML
    loader instance: its events and tag resolver are used) but raises
    :class:`YamlGuardError` at the first alias or node that takes the document past
    ``max_nodes`` expanded nodes or ``max_depth`` levels, and at the first recursive alias.
    Explicit tags outside :data:`PLAIN_DATA_TAGS` are collected in
    :attr:`ComposedDocument.tag_errors`. PyYAML's own errors (syntax, undefined alias,
    duplicate anchor, several documents) propagate as :class:`yaml.MarkedYAMLError`.
    """
    loader.get_event()  # stream start
    root = None
    tag_errors: list[YamlGuardError] = []
    if not loader.check_event(yaml.StreamEndEvent):
        try:
            root = _compose_document(loader, max_nodes, max_depth, tag_errors)
        except yaml.scanner.ScannerError as exc:
            # libyaml ≥ 0.2.5 (bundled with PyYAML 6.0.4 wheels) scans flow collections ahead
            # of its events and stops at 1,000 levels itself, before this guard sees level
            # max_depth + 1: the same refusal, at libyaml's position, without a key path
            if "maximum nesting depth" not in str(exc.problem):
                raise
            raise YamlGuardError(f"the document nests deeper than {max_depth} levels",
                                 exc.problem_mark, "") from None
    if not loader.check_event(yaml.StreamEndEvent):
        event: Any = loader.get_event()
        raise yaml.composer.ComposerError(
            "expected a single document in the stream",
            root.start_mark if root is not None else None, "but found another document",
            event.start_mark)
    loader.get_event()  # stream end
    return ComposedDocument(root=root, tag_errors=tag_errors)


def _compose_document(loader: Any, max_nodes: int, max_depth: int,
                      tag_errors: list[YamlGuardError]) -> yaml.Node:
    """Compose one document from the event after its DOCUMENT-START to its DOCUMENT-END."""
    loader.get_event()  # document start
    anchors: dict[str, _Anchor] = {}
    stack: list[_Frame] = []
    total_nodes = 0
    root: yaml.Node | None = None

    def attach(node: yaml.Node, expanded_nodes: int, height: int) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        parent = stack[-1]
        parent.expanded_nodes += expanded_nodes
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.node, yaml.SequenceNode):
            parent.node.value.append(node)
        elif not parent.has_key:
            parent.key, parent.has_key = node, True
        else:
            parent.node.value.append((parent.key, node))
            parent.key, parent.has_key = None, False

    while root is None:
        event: Any = loader.get_event()
        mark: Any = event.start_mark  # a yaml.Mark or the C loader's Mark
        end_mark: Any = event.end_mark
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            frame = stack.pop()
            frame.node.end_mark = end_mark
            if frame.anchor is not None:
                frame.anchor.expanded_nodes = frame.expanded_nodes
                frame.anchor.height = frame.height
                frame.anchor.open = False
            attach(frame.node, frame.expanded_nodes, frame.height)
            continue
        if isinstance(event, yaml.AliasEvent):
            name = str(event.anchor)
            target = anchors.get(name)
            if target is None:
                raise yaml.composer.ComposerError(None, None, f"found undefined alias {name!r}",
                                                  mark)
            if target.open:
                raise YamlGuardError(
                    f"alias '*{name}' refers to the node anchored '&{name}' that contains it; "
                    "recursive structures are not allowed", mark, _key_path(stack))
            total_nodes += target.expanded_nodes
            if total_nodes > max_nodes:
                raise YamlGuardError(
                    f"alias '*{name}' takes the document past {max_nodes:,} nodes once "
                    "expanded (each use of an alias counts every node it stands for); "
                    "refusing an alias bomb", mark, _key_path(stack))
            if len(stack) + target.height > max_depth:
                raise YamlGuardError(
                    f"alias '*{name}' nests the document deeper than {max_depth} levels once "
                    "expanded", mark, _key_path(stack))
            attach(target.node, target.expanded_nodes, target.height)
            continue
        # a scalar, or the start of a sequence or mapping
        total_nodes += 1
        if total_nodes > max_nodes:
            raise YamlGuardError(f"the document has more than {max_nodes:,} nodes",
                                 mark, _key_path(stack))
        if len(stack) + 1 > max_depth:
            raise YamlGuardError(f"the document nests deeper than {max_depth} levels",
                                 mark, _key_path(stack))
        if event.anchor is not None and event.anchor in anchors:
            raise yaml.composer.ComposerError(
                f"found duplicate anchor {event.anchor!r}; first occurrence",
                anchors[event.anchor].node.start_mark, "second occurrence", mark)
        tag = event.tag
        if tag is not None and tag != "!" and tag not in PLAIN_DATA_TAGS:
            tag_errors.append(YamlGuardError(_tag_message(tag), mark,
                                             _key_path(stack)))
        node: yaml.Node
        if isinstance(event, yaml.ScalarEvent):
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            node = yaml.ScalarNode(tag, event.value, mark, end_mark,
                                   style=event.style)
            if event.anchor is not None:
                anchors[event.anchor] = _Anchor(node, open=False)
            attach(node, 1, 1)
            continue
        kind: type[yaml.SequenceNode | yaml.MappingNode] = (
            yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode)
        if tag is None or tag == "!":
            tag = loader.resolve(kind, None, event.implicit)
        collection = kind(tag, [], mark, None, flow_style=event.flow_style)
        anchor = None
        if event.anchor is not None:
            anchor = anchors[event.anchor] = _Anchor(collection)
        stack.append(_Frame(node=collection, anchor=anchor))
    loader.get_event()  # document end
    return root


_KEY_PATH_PARTS = 8
"""Longest dotted key shown for a guard error (deeper ones end in ``…``)."""


def _key_path(stack: Sequence[_Frame]) -> str:
    """The dotted key of the node about to be attached to the innermost open collection."""
    parts: list[str] = []
    for frame in stack:
        if isinstance(frame.node, yaml.SequenceNode):
            parts.append(str(len(frame.node.value)))
        elif frame.has_key:
            key = frame.key
            parts.append(str(key.value) if isinstance(key, yaml.ScalarNode) else "?")
        else:
            break  # the node is a key: name the mapping that holds it
        if len(parts) > _KEY_PATH_PARTS:
            return ".".join(parts[:_KEY_PATH_PARTS]) + "…"
    return ".".join(parts)


def _tag_message(tag: str) -> str:
    """Why an explicit tag is refused."""
    short = ("!!" + tag[len(_STANDARD_TAG_PREFIX):] if tag.startswith(_STANDARD_TAG_PREFIX)
             else tag)
    plain = ("only plain data is read (strings, numbers, true/false, null, lists and "
             "mappings); remove the tag")
    if short.startswith("!!python/"):
        return f"tag '{short}' is not allowed: Python objects are never loaded; {plain}"
    return f"tag '{short}' is not allowed; {plain}"


def _guard_problem(path: str, exc: YamlGuardError) -> InputProblem:
    """A guard error as a located problem."""
    mark = exc.problem_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return InputProblem(path=path, line=line, col=col, key=exc.key, message=exc.message)


def key_position(text: str, loc: Sequence[str | int]) -> tuple[int, int] | None:
    """1-based (line, column) of the deepest YAML node along ``loc`` (None if unknown)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = compose_guarded(loader).root
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    mark = node.start_mark if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    mark, node = key_node.start_mark, value_node
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and part < len(node.value):
            node = node.value[part]
            mark = node.start_mark
        else:
            break
    return None if mark is None else (mark.line + 1, mark.column + 1)
