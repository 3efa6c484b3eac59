"""The one number style of every human-readable report (#28): a number is written here or not
at all.

* thousands separators on every number of four digits or more (``8,192``, ``1,808 ms``);
* about three significant digits (``8.79 req/s``, ``0.256``, ``181``), integers exactly;
* a unit on every quantity (``ms``, ``req/s``, ``GB/s``, ``MB``, ``tokens``, ``GPUs``);
* fractions as percentages (``4.6%``, ``34%``), signed where they are a change (``+17%``);
* plurals by count (``1 GPU``, ``about 1 KV transfer``), and the article a number takes
  when read aloud (``an 8,192-token budget``, ``an 816:208 split``, ``a 12:4 split``);
* phases counted in words (``both phases``, ``all 3 phases``).

Pure functions of plain values; ``None`` (a value that does not exist) is :data:`DASH`.
Nothing here depends on the locale or the terminal. ``tests/render/test_numbers.py`` pins
the style; ``tests/architecture/test_number_style.py`` checks that no other rendering module
formats a float itself.
"""

from __future__ import annotations

import math

DASH = "–"
"""Shown where a value does not exist."""


def num(x: float | None, digits: int = 3) -> str:
    """A number with thousands separators and about ``digits`` significant digits.

    Integers and numbers of at least ``10**(digits-1)`` show no decimals (``1,024``,
    ``181``); smaller ones keep ``digits`` significant digits (``18.1``, ``2.61``, ``0.524``).
    """
    if x is None or not math.isfinite(x):
        return DASH
    if (isinstance(x, int) and not isinstance(x, bool)) or float(x).is_integer():
        return f"{int(x):,}"
    ax = abs(x)
    if ax >= 10 ** (digits - 1) - 0.5:
        return f"{x:,.0f}"
    if ax == 0:
        return "0"
    if ax >= 1:
        text = f"{x:.{digits - len(str(int(ax)))}f}"
        # rounding up to the next power of ten (9.996 → 10.00) keeps three digits
        return text if len(text.replace("-", "").replace(".", "")) <= digits else num(
            float(text), digits)
    return f"{x:.{digits}g}"


def count(n: int | None) -> str:
    """An integer count with thousands separators (``1,024``)."""
    return DASH if n is None else f"{int(n):,}"


def pct(x: float | None) -> str:
    """A fraction as a percentage: 0.046 → ``4.6%``, 0.34 → ``34%``, 0.0005 → ``0.05%``."""
    if x is None or not math.isfinite(x):
        return DASH
    v = x * 100
    if abs(v) >= 9.95:
        return f"{v:.0f}%"
    if abs(v) >= 0.095 or v == 0:
        return f"{v:.1f}%"
    return f"{v:.2f}%"


def signed_pct(x: float | None) -> str:
    """A change as a signed percentage: ``+17%``, ``−23%`` (a true minus sign), ``0%``."""
    if x is None or not math.isfinite(x):
        return DASH
    text = pct(abs(x))
    if text in ("0.0%", "0.00%"):
        return "0%"
    return ("+" if x > 0 else "−") + text


def ms(x: float | None) -> str:
    """A latency: ``1,808 ms``, ``70.4 ms``, ``3.2 ms``; a whole number of ms (an SLO target)
    as it is, ``50 ms``."""
    if x is None or not math.isfinite(x):
        return DASH
    if abs(x) >= 99.95 or float(x).is_integer():
        return f"{x:,.0f} ms"
    return f"{x:.1f} ms"


def seconds(x: float | None) -> str:
    """A duration in seconds: ``21.8 s``."""
    return DASH if x is None else f"{num(x)} s"


def rps(x: float | None) -> str:
    """A request rate: ``8.79 req/s``."""
    return DASH if x is None else f"{num(x)} req/s"


def gb_per_s(x: float | None) -> str:
    """Bytes/s as GB/s: ``17.3 GB/s``."""
    return DASH if x is None else f"{num(x / 1e9)} GB/s"


def megabytes(x: float | None) -> str:
    """Bytes as MB: ``1,966 MB``."""
    return DASH if x is None else f"{num(x / 1e6)} MB"


def kilobytes(x: float | None) -> str:
    """Bytes as kB: ``328 kB``."""
    return DASH if x is None else f"{num(x / 1e3)} kB"


def gigabytes(x: float | None) -> str:
    """Bytes as GB: ``70.6 GB``."""
    return DASH if x is None else f"{num(x / 1e9)} GB"


def factor(x: float | None) -> str:
    """A multiplier: ``1.05×``, ``7.2×``, ``36.7×``, ``1,250×``."""
    if x is None or not math.isfinite(x):
        return DASH
    if abs(x) < 9.995:  # two decimals at most: 1.05×, 7.2×, 3×
        return f"{x:.2f}".rstrip("0").rstrip(".") + "×"
    return f"{num(x)}×"


def usd(x: float | None) -> str:
    """A price: ``$56.00``."""
    return DASH if x is None or not math.isfinite(x) else f"${x:,.2f}"


def plural(n: float, word: str, many: str | None = None) -> str:
    """``word`` for a count of one (as written: ``1``, ``1.0``), else its plural (``many``,
    default ``word + 's'``)."""
    return word if num(n) == "1" else (many or word + "s")


def counted(n: float | None, word: str, many: str | None = None) -> str:
    """A count with its noun: ``1 GPU``, ``16 GPUs``, ``0.256 KV transfers``."""
    if n is None:
        return DASH
    return f"{num(n)} {plural(n, word, many)}"


def gpus(n: int | None) -> str:
    """``1 GPU``, ``1,024 GPUs``."""
    return DASH if n is None else f"{count(n)} GPU{'s' if n != 1 else ''}"


def tokens(n: float | None) -> str:
    """``8,192 tokens``."""
    return counted(n, "token")


def phases(n: int) -> str:
    """The phases counted in words: ``the phase``, ``both phases``, ``all 3 phases``."""
    if n == 1:
        return "the phase"
    return "both phases" if n == 2 else f"all {n} phases"


def split(prefill_gpus: int | None, decode_gpus: int | None) -> str:
    """``12:4`` (prefill:decode GPUs)."""
    if prefill_gpus is None or decode_gpus is None:
        return DASH
    return f"{prefill_gpus:,}:{decode_gpus:,}"


_AN_WORDS = ("unchunked", "n/a", "hour", "honest", "ideal", "integer", "idle", "EP", "L40S",
             "H100", "H200", "H20", "MI300X", "RTX", "FP8", "LLM", "SLO", "NVLink", "NVL")
"""Words and initialisms that start with a vowel sound (``an H100``, ``an SLO``)."""


def _number_prefix(text: str) -> str | None:
    """The digits a number starts with, as read aloud in groups: ``8,192`` → ``8``,
    ``816:208`` → ``816``, ``11.5`` → ``11``; None when ``text`` does not start with one."""
    head = ""
    for ch in text.lstrip("$+"):
        if ch.isdigit():
            head += ch
        elif ch == "," and head:
            break  # the first thousands group is what is read first ("eight thousand …")
        else:
            break
    return head or None


def article(text: str) -> str:
    """``a`` or ``an`` for ``text`` as read aloud: numbers by their first spoken group
    (``an 8,192``, ``an 11×``, ``an 18%``, ``an 80``, ``an 816:208``, ``a 1,024``, ``a 12:4``),
    words by their first sound (``an ideal``, ``an H100``, ``a TP8``)."""
    head = _number_prefix(text)
    if head is not None:
        # "eight…", "eleven…", "eighteen…" (8, 80–89, 800–899; 11; 18) start with a vowel
        return "an" if head.startswith("8") or head in ("11", "18") else "a"
    if any(text.startswith(w) for w in _AN_WORDS):
        return "an"
    return "an" if text[:1].lower() in "aeio" else "a"


def with_article(text: str) -> str:
    """``text`` after its article: ``an 8,192-token budget``."""
    return f"{article(text)} {text}"
