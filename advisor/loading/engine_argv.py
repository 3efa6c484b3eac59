"""What a container runs: the serving engine's command line found in a Kubernetes container's
``command``/``args`` (or in the shell script they start), with every flag's position.

A container may run the engine directly (``command: [vllm, serve]``, ``args: [...]``), or
through ``sh -c``/``bash -c`` with a script (LeaderWorkerSet and llm-d examples: comments,
backslash continuations, ``exec``, variables, ``$((...))`` arithmetic, JSON in single quotes
over several lines). :func:`container_words` turns either into words with their 1-based line
and column in the manifest; :func:`find_invocation` picks the engine's invocation out of them;
:func:`expand` substitutes the variables a manifest sets (the container's ``env`` with
literal values, the script's own assignments, Kubernetes' ``$(VAR)`` form, the
LeaderWorkerSet group size), leaving a value it cannot know as None so that the caller names
the gap instead of guessing.

Engines recognised (the command forms of their own docs): ``vllm serve MODEL`` and
``python -m vllm.entrypoints.openai.api_server``; ``python -m sglang.launch_server``;
``python3 -m dynamo.vllm|dynamo.sglang|dynamo.trtllm`` (NVIDIA Dynamo workers, whose
arguments are the engine's own); ``trtllm-serve MODEL``. Routers: ``vllm-router``,
``python -m sglang_router.launch_router``, ``python -m dynamo.frontend``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env"})


@dataclass(frozen=True, kw_only=True)
class Word:
    """One shell word as written, with its position in the manifest."""

    text: str
    line: int
    col: int


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """An engine or router command: what runs and its argument words (after the program)."""

    program: str
    """``vllm``, ``sglang``, ``dynamo.vllm``, ``dynamo.sglang``, ``dynamo.trtllm``, ``trtllm``,
    ``vllm-router``, ``sglang-router`` or ``dynamo.frontend``."""
    words: tuple[Word, ...]
    at: Word
    """The program's first word (where the command is)."""
    assignments: tuple[tuple[str, str], ...] = ()
    """``NAME=value`` assignments the script makes before the command, in order."""

    @property
    def engine(self) -> str | None:
        """The serving engine (``vllm``, ``sglang``, ``trtllm``), None for a router."""
        return {"vllm": "vllm", "dynamo.vllm": "vllm", "sglang": "sglang",
                "dynamo.sglang": "sglang", "trtllm": "trtllm",
                "dynamo.trtllm": "trtllm"}.get(self.program)


# --------------------------------------------------------------------------- words
def node_words(node: yaml.Node | None) -> list[Word]:
    """The items of a YAML list of strings (``command``/``args``) as words."""
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [Word(text=str(item.value), line=item.start_mark.line + 1,
                 col=item.start_mark.column + 1)
            for item in node.value if isinstance(item, yaml.ScalarNode)]


def container_words(command: yaml.Node | None, args: yaml.Node | None) -> list[list[Word]]:
    """The commands a container runs: its ``command`` + ``args`` as one command, or, when it
    starts a shell with ``-c``, every command of the script (split at ``;``, ``&&``, ``|``,
    newlines)."""
    words = node_words(command) + node_words(args)
    for i, word in enumerate(words[:-1]):
        if i < 2 and word.text in SHELLS and words[i + 1].text.startswith("-") \
                and "c" in words[i + 1].text:
            if i + 2 >= len(words):
                return []
            script = words[i + 2]
            node = _script_node(command, args, script)
            return script_commands(script.text, script.line, script.col,
                                   literal=node is not None and node.style in ("|", ">"))
    return [words]


def _script_node(command: yaml.Node | None, args: yaml.Node | None,
                 word: Word) -> yaml.ScalarNode | None:
    for holder in (command, args):
        if isinstance(holder, yaml.SequenceNode):
            for item in holder.value:
                if (isinstance(item, yaml.ScalarNode) and item.start_mark.line + 1 == word.line
                        and item.start_mark.column + 1 == word.col):
                    return item
    return None


_OPERATORS = ("&&", "||", ";", "|", "&", "\n")


def script_commands(text: str, line: int, col: int, literal: bool = False) -> list[list[Word]]:
    """The commands of a shell script held in a YAML string that starts at ``line:col``
    (``literal``: a block scalar, whose text starts on the next line). Quotes, escapes,
    comments and backslash-newline continuations follow the shell; ``$(...)``, ``$((...))``
    and ``${...}`` stay inside their word."""
    commands: list[list[Word]] = [[]]
    i, n = 0, len(text)
    start_line = line + 1 if literal else line

    def position(offset: int) -> tuple[int, int]:
        row = text.count("\n", 0, offset)
        if row == 0 and not literal:
            return start_line, col + offset
        return start_line + row, offset - (text.rfind("\n", 0, offset) + 1) + 1

    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            continue
        if ch in " \t\r":
            i += 1
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            if commands[-1]:
                commands.append([])
            i += len(op)
            continue
        begin = i
        word, i = _read_word(text, i)
        row, column = position(begin)
        commands[-1].append(Word(text=word, line=row, col=column))
    return [c for c in commands if c]


def _read_word(text: str, i: int) -> tuple[str, int]:
    """One shell word from ``text[i:]`` (quotes removed, ``$`` forms kept) and where it ends."""
    out: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n;&|":
            break
        if ch == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        elif ch == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            out.append(text[i + 1:end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`':
                    i += 1
                out.append(text[i])
                i += 1
            i += 1
        elif ch == "$" and i + 1 < n and text[i + 1] in "({":
            close = ")" if text[i + 1] == "(" else "}"
            depth, j = 0, i + 1
            while j < n:
                if text[j] == text[i + 1]:
                    depth += 1
                elif text[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out), i


# --------------------------------------------------------------------------- invocations
_MODULES = {"vllm.entrypoints.openai.api_server": "vllm", "sglang.launch_server": "sglang",
            "dynamo.vllm": "dynamo.vllm", "dynamo.sglang": "dynamo.sglang",
            "dynamo.trtllm": "dynamo.trtllm", "sglang_router.launch_router": "sglang-router",
            "dynamo.frontend": "dynamo.frontend", "vllm_router.launch_router": "vllm-router"}
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def find_invocation(commands: Sequence[Sequence[Word]]) -> Invocation | None:
    """The first engine or router command among ``commands`` (``exec``, ``env`` and
    ``NAME=value`` prefixes skipped), with the assignments made before it."""
    assignments: list[tuple[str, str]] = []
    for command in commands:
        if all(_ASSIGNMENT.match(w.text) for w in command):
            assignments += [(m[1], m[2]) for w in command if (m := _ASSIGNMENT.match(w.text))]
            continue
        words = list(command)
        while words and (words[0].text in ("exec", "env", "nohup")
                         or _ASSIGNMENT.match(words[0].text)):
            words.pop(0)
        found = _program(words) if words else None
        if found is not None:
            program, rest = found
            return Invocation(program=program, words=tuple(rest), at=words[0],
                              assignments=tuple(assignments))
    return None


def _program(words: list[Word]) -> tuple[str, list[Word]] | None:
    name = words[0].text.rsplit("/", 1)[-1]
    if name == "vllm" and len(words) > 1 and words[1].text == "serve":
        return "vllm", words[2:]
    if name in ("vllm-router", "trtllm-serve"):
        return ("vllm-router" if name == "vllm-router" else "trtllm"), words[1:]
    if name == "sglang" and len(words) > 1 and words[1].text == "serve":
        return "sglang", words[2:]
    if re.fullmatch(r"python[0-9.]*", name):
        for i in range(1, len(words) - 1):
            if words[i].text == "-m" and words[i + 1].text in _MODULES:
                return _MODULES[words[i + 1].text], words[i + 2:]
    return None


# --------------------------------------------------------------------------- variables
_VAR = re.compile(r"\$\(\(([^()]*(?:\([^()]*\)[^()]*)*)\)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)"
                  r"(?::?-([^}]*))?\}|\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand(text: str, env: Mapping[str, str | None]) -> str | None:
    """``text`` with its variables substituted from ``env``; None when one is unknown
    (absent, or set from a secret or field reference) — never a guess."""
    missing = False

    def one(match: re.Match[str]) -> str:
        nonlocal missing
        arith, braced, default, kube, plain = match.groups()
        if arith is not None:  # bare names are variables inside $((...))
            inner = expand(re.sub(r"(?<![$\w{])([A-Za-z_][A-Za-z0-9_]*)", r"${\1}", arith), env)
            number = _arithmetic(inner) if inner is not None else None
            if number is None:
                missing = True
                return ""
            return str(number)
        name = braced or kube or plain
        value = env.get(name)
        if value is None:
            if default is not None:
                return str(default)
            missing = True
            return ""
        return value

    result = _VAR.sub(one, text)
    return None if missing else result


def _arithmetic(expression: str) -> int | None:
    """A shell ``$((...))`` over integers (names already substituted); None otherwise."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None
    return _integer(tree.body)


_BINARY: dict[type, Callable[[int, int], int | None]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: int(a / b) if b else None,  # the shell truncates
           ast.Mod: lambda a, b: a % b if b else None}


def _integer(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _integer(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _integer(node.left), _integer(node.right)
        if left is None or right is None:
            return None
        result: int | None = _BINARY[type(node.op)](left, right)
        return result
    return None


# --------------------------------------------------------------------------- flags
@dataclass(frozen=True, kw_only=True)
class Flag:
    """One option of an engine command line: its canonical name, value (None for a switch)
    and where it is written."""

    name: str
    value: str | None
    at: Word


_VLLM_ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size",
                 "-dp": "--data-parallel-size", "-dpl": "--data-parallel-size-local",
                 "-ep": "--enable-expert-parallel", "-dpa": "--data-parallel-address",
                 "-dpr": "--data-parallel-start-rank", "-dpp": "--data-parallel-rpc-port"}
_SGLANG_ALIASES = {"--tp": "--tp-size", "--tensor-parallel-size": "--tp-size",
                   "--pp": "--pp-size", "--pipeline-parallel-size": "--pp-size",
                   "--dp": "--dp-size", "--data-parallel-size": "--dp-size",
                   "--attention-data-parallel-size": "--attn-dp-size", "--ep": "--ep-size",
                   "--expert-parallel-size": "--ep-size", "--model": "--model-path"}
SWITCHES = frozenset({
    "--enable-expert-parallel", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
    "--enable-dp-attention", "--trust-remote-code", "--enforce-eager", "--enable-dbo",
    "--headless", "--skip-tokenizer-init", "--enable-eplb", "--enable-two-batch-overlap",
    "--data-parallel-multi-port-external-lb", "--data-parallel-hybrid-lb",
    "--data-parallel-external-lb", "--no-enable-prefix-caching", "--enable-prefix-caching",
    "--disable-uvicorn-access-log", "--disable-log-requests", "--enable-prefiller-sampling",
    "--vllm-pd-disaggregation", "--pd-disaggregation", "--service-discovery",
    "--enforce-disagg", "--disable-radix-cache", "--enable-dp-lm-head", "--dp-aware",
    "--disable-cuda-graph", "--no-disable-hybrid-kv-cache-manager", "--enable-ssl-refresh"})
"""Options that take no value (the next word is not theirs)."""


def canonical(name: str, program: str) -> str:
    """An option's canonical spelling: dashes for underscores, the engine's long alias."""
    if name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    if program in ("sglang", "dynamo.sglang"):
        return _SGLANG_ALIASES.get(name, name)
    return _VLLM_ALIASES.get(name, name)


def parse_flags(invocation: Invocation) -> tuple[list[Word], list[Flag]]:
    """(positional words, options) of an invocation; ``--name=value`` is split, an option
    takes the next word unless it is a switch or the next word is another option. A repeated
    option keeps every occurrence (the engine's argparse keeps the last)."""
    positional: list[Word] = []
    flags: list[Flag] = []
    words = list(invocation.words)
    i = 0
    while i < len(words):
        word = words[i]
        text = word.text
        if text.startswith("-") and not re.fullmatch(r"-[0-9.]+", text):
            name, _, inline = text.partition("=")
            name = canonical(name, invocation.program)
            if _:
                flags.append(Flag(name=name, value=inline, at=word))
            elif (name in SWITCHES or i + 1 >= len(words)
                  or (words[i + 1].text.startswith("-")
                      and not re.fullmatch(r"-[0-9.]+", words[i + 1].text))):
                flags.append(Flag(name=name, value=None, at=word))
            else:
                flags.append(Flag(name=name, value=words[i + 1].text, at=word))
                i += 1
        else:
            positional.append(word)
        i += 1
    return positional, flags


def split_args(text: str, word: Word) -> list[Word]:
    """Extra arguments held in one string (KServe's ``VLLM_ADDITIONAL_ARGS``), split as the
    shell splits them, each at the string's position."""
    commands = script_commands(text, word.line, word.col)
    return [Word(text=w.text, line=word.line, col=word.col) for c in commands for w in c]
