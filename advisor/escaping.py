"""The one escaping rule for text that leaves pd-advisor (#33).

Names, paths, ids and keys come from files and argv the user (or an attacker) controls. Every
such string that reaches a terminal, an emitted script or a file pd-advisor writes passes
through one of these functions, so that no value can move the cursor, clear or retitle the
terminal, write the clipboard, reorder what is shown, start a new line, end a comment, or
become an option of the command it is passed to:

* :func:`visible` — THE rule: every character Python's :meth:`str.isprintable` calls
  non-printable is shown as its Python escape (``\\x1b``, ``\\n``, ``\\u202e``, ``\\udcff``).
  That is the Unicode categories Cc (C0 and C1 controls, DEL: terminal escape and OSC
  sequences, line breaks), Cf (format characters: the bidirectional overrides and isolates of
  "Trojan Source", CVE-2021-42574, zero-width characters), Zl/Zp (U+2028/U+2029), Zs other
  than the space, Cs (lone surrogates: undecodable bytes of a file name), Co and Cn. Printable
  text, non-ASCII letters included, is unchanged. Used by every renderer for terminals and
  text files (``render.text``), problem lines (``loading.errors``) and the CLI's messages.
* :func:`yaml_scalar` — a value in a YAML file pd-advisor writes, through PyYAML's emitter
  (never string formatting): quoted when it would otherwise read as another type (``2024``,
  ``yes``, ``null``) or hold YAML syntax, and written with escapes when it is not plain
  printable ASCII, so the file's bytes hold no control or bidirectional characters while the
  value loads back unchanged. :func:`yaml_comment` is the text of a ``#`` comment: the rule
  applied, so it stays one line.
* :func:`json_escaped` — a JSON text pd-advisor prints or writes: the same document, with
  every such character inside its strings written as a ``\\uXXXX`` escape.
* :func:`shell_word` — one word of an emitted bash script: :func:`shlex.quote`, or bash's
  ``$'...'`` quoting with escapes when the word holds a non-printable character (the argv is
  the same, the script's bytes are printable); :func:`sh_word` is a word of a POSIX ``sh -c``
  script inside a manifest (``$'...'`` is bash's, so single quotes; the YAML emitter escapes
  the script's non-printable characters in the manifest's bytes). :func:`path_argument` is a
  file path given to a command as a value: ``./`` in front of a relative path that starts
  with ``-``, so that it can never be read as an option (``--trust-remote-code``).

Markup formats (HTML, markdown, SARIF, JUnit, GitHub annotations) escape their own syntax on
top of :func:`visible`, in their renderers.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any


def _escape(ch: str) -> str:
    if ch.isprintable():
        return ch
    code = ord(ch)
    if ch in "\n\t\r":
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every non-printable character shown as its escape (module docstring);
    the same string when there is none."""
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def visible_doc(value: Any) -> Any:
    """``value`` (a JSON document) with :func:`visible` applied to every string in it, keys
    included; the same object when nothing needs escaping."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, Mapping):
        return {visible_doc(k): visible_doc(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [visible_doc(v) for v in value]
    return value


_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_.\-/]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "nan", "inf"})
"""Plain scalars that YAML 1.1 or 1.2 reads as a boolean, a null or a number."""


def yaml_scalar(value: str | int | float | bool | None) -> str:
    """``value`` as one YAML flow scalar written by PyYAML's emitter: a string plain only
    when it is an identifier or path that every YAML version reads back as that string
    (``llama-3.1-8b``, ``models/x.yaml``), else double-quoted, with anything but printable
    ASCII escaped (``"2024"``, ``"x\\npolicy: ..."``, ``"\\u202E"``). A string holding a
    lone surrogate (bytes of a file name that are not UTF-8) has no YAML form: ValueError."""
    import yaml

    if isinstance(value, str) and _SURROGATE.search(value):
        raise ValueError(f"{visible(value)} is not UTF-8 text; it cannot be written to YAML")

    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _WORDS:
        return value
    style = '"' if isinstance(value, str) else None
    text = yaml.safe_dump(value, allow_unicode=False, default_style=style, width=1 << 30)
    for end in ("\n...\n", "\n"):
        if text.endswith(end):
            return text[:-len(end)]
    return text


_JSON_SUSPECT = re.compile(r"[^\n -~]")
"""Characters of a JSON text that may need an escape: anything but printable ASCII and the
line breaks of the indentation (JSON's own escapes already cover C0 controls in strings)."""


def json_escaped(text: str) -> str:
    """A JSON text with every character :func:`visible` would escape written as a JSON
    ``\\uXXXX`` escape (a surrogate pair past U+FFFF): the same document, but DEL, C1 controls
    and bidirectional overrides in its strings (``ensure_ascii=False`` keeps them raw) never
    reach a terminal. Such characters occur only inside strings, where the escape is valid."""

    def escape(match: re.Match[str]) -> str:
        ch = match.group()
        if ch.isprintable():
            return ch
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return _JSON_SUSPECT.sub(escape, text)


def yaml_comment(text: str) -> str:
    """``text`` for a ``#`` comment line: :func:`visible`, so it cannot leave the comment."""
    return visible(text)


def shell_word(word: str) -> str:
    """One word of a bash script: :func:`shlex.quote`d, or ``$'...'`` with escapes when it
    holds a character :func:`visible` would escape (bash reads back the same bytes)."""
    if word.isprintable():
        return shlex.quote(word)
    body = "".join("\\\\" if ch == "\\" else "\\'" if ch == "'" else
                   _bash_escape(ch) for ch in word)
    return f"$'{body}'"


def sh_word(word: str) -> str:
    """One word of a POSIX ``sh -c`` script (``/bin/sh`` is dash on Debian and Ubuntu images:
    no ``$'...'``): :func:`shlex.quote`, whose single quotes hold every byte literally. Only
    for a script that reaches a file through :func:`yaml_scalar`'s emitter, which writes any
    character :func:`visible` would escape as an escape."""
    return shlex.quote(word)


def _bash_escape(ch: str) -> str:
    if ch.isprintable():
        return ch
    data = ch.encode("utf-8", "surrogateescape")
    return "".join(f"\\x{b:02x}" for b in data)


def path_argument(path: str) -> str:
    """A file path passed as a command's value: ``./`` in front when it is relative and
    starts with ``-`` (else it is unchanged), so no program reads it as an option."""
    return f"./{path}" if path.startswith("-") else path
