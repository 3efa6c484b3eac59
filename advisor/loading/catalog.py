"""Find, load, validate and cache GPU, interconnect, model and engine profiles.

Search order for an id (first match wins, so a user profile overrides a built-in one):

1. the ``extra_dirs`` passed to :class:`ProfileCatalog` (``--profiles DIR`` on the CLI), in
   order;
2. the directories in the ``PD_ADVISOR_PROFILES`` environment variable (``os.pathsep``-
   separated), in order;
3. the built-in profiles.

Every directory has the layout of the built-in one: ``gpus/``, ``interconnects/``,
``models/`` and ``engines/`` sub-directories holding one ``<id>.yaml`` (or ``.yml``) file
per profile, whose ``id:`` must equal the file name. Directories that do not exist are skipped.

Built-in profiles: a wheel ships the repository's ``profiles/`` directory as package data
``advisor/profiles`` (``force-include`` in ``pyproject.toml``), found with
``importlib.resources.files("advisor") / "profiles"``. In a source checkout or an editable
install that directory does not exist, and the catalog falls back to ``profiles/`` at the
repository root, next to the ``advisor`` package.

A reference is either an id or a path to a YAML file: it is a path when it ends in
``.yaml``/``.yml``/``.json`` or contains a path separator. A model reference may also name a
Hugging Face ``config.json`` (or a folder holding one): the profile is then derived from it by
:mod:`advisor.loading.hf_config`.
"""

from __future__ import annotations

import difflib
import importlib.resources
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The catalog's errors and kind names are re-exported (``X as X`` marks an explicit
# re-export for mypy and ruff): callers import them from the catalog.
from advisor.loading.input_file import note_read
from advisor.loading.profile_errors import KIND_SINGULAR as KIND_SINGULAR
from advisor.loading.profile_errors import YAML_SUFFIXES, looks_like_path
from advisor.loading.profile_errors import EngineVersionError as EngineVersionError
from advisor.loading.profile_errors import ProfileInvalidError as ProfileInvalidError
from advisor.loading.profile_errors import ProfileNotFoundError as ProfileNotFoundError

if TYPE_CHECKING:  # pydantic is imported lazily, on the first parse
    from advisor.core.engine import EngineSpec
    from advisor.core.hardware import GpuSpec, LinkSpec
    from advisor.core.model_arch import ModelSpec
    from advisor.loading.engine_profile import EngineProfile
    from advisor.loading.profile_schema import Profile

KINDS: tuple[str, ...] = ("gpus", "interconnects", "models", "engines")
"""Profile kinds, named after their directories."""

ENV_VAR = "PD_ADVISOR_PROFILES"
"""Environment variable with extra profile directories (``os.pathsep``-separated)."""

ENGINE_NAMES: tuple[str, ...] = ("vllm", "sglang", "trtllm")
"""Engines the advisor knows; the profile named like the engine is its current family."""


def builtin_profiles_dir() -> Path:
    """Directory of the built-in profiles (packaged copy, else the repository root's)."""
    packaged = importlib.resources.files("advisor") / "profiles"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "profiles"


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown profile kind {kind!r}; expected one of {', '.join(KINDS)}")


HF_CONFIG_FILE_NAME = "config.json"
"""The file looked for inside a folder named as a model."""


def config_path(ref: str) -> Path | None:
    """The Hugging Face ``config.json`` a model reference names, or None if it names no such
    file (then ``advisor.loading.hf_config``, which reads it, is not even imported).

    A reference names a config when it is an existing ``*.json`` file or an existing folder
    holding ``config.json``. Relative references are taken from the working directory.
    """
    path = Path(ref).expanduser()
    if path.suffix.lower() == ".json" and path.is_file():
        return path.resolve()
    if path.is_dir() and (path / HF_CONFIG_FILE_NAME).is_file():
        return (path / HF_CONFIG_FILE_NAME).resolve()
    return None


class ProfileCatalog:
    """Look up profiles by id or path; parsed profiles and specs are cached per instance."""

    def __init__(self, extra_dirs: Sequence[Path] = (),
                 env: Mapping[str, str] | None = None) -> None:
        """Search ``extra_dirs``, then ``$PD_ADVISOR_PROFILES``, then the built-in profiles.

        ``env`` defaults to ``os.environ``; pass a mapping to isolate the catalog (tests).
        """
        environ = os.environ if env is None else env
        env_dirs = [Path(p) for p in environ.get(ENV_VAR, "").split(os.pathsep) if p.strip()]
        self.builtin_dir = builtin_profiles_dir()
        self.user_dirs: list[Path] = [Path(d).expanduser() for d in extra_dirs] + [
            d.expanduser() for d in env_dirs]
        self.search_dirs: list[Path] = [*self.user_dirs, self.builtin_dir]
        """Profile roots in search order (user directories first)."""
        self._index: dict[str, dict[str, Path]] = {}
        self._profiles: dict[tuple[str, Path], Profile] = {}
        self._specs: dict[tuple[str, Path], Any] = {}

    # ---- discovery ---------------------------------------------------------------------
    def _kind_index(self, kind: str) -> dict[str, Path]:
        """id -> file for one kind; the first directory in search order wins."""
        _check_kind(kind)
        if kind not in self._index:
            index: dict[str, Path] = {}
            for root in self.search_dirs:
                directory = root / kind
                if not directory.is_dir():
                    continue
                try:
                    entries = sorted(os.scandir(directory), key=lambda e: e.name)
                except OSError:  # unreadable: as if empty (#21)
                    continue
                for entry in entries:
                    stem, suffix = os.path.splitext(entry.name)
                    if suffix.lower() not in YAML_SUFFIXES:
                        continue
                    try:
                        usable = entry.is_file() or not entry.is_dir()
                    except OSError:  # a symbolic link loop: reported when it is loaded (#21)
                        usable = True
                    if usable:  # a broken link too: its problem is reported when needed
                        index.setdefault(stem, Path(entry.path))
            self._index[kind] = index
        return self._index[kind]

    def ids(self, kind: str) -> list[str]:
        """Sorted ids of every profile of ``kind`` (user and built-in)."""
        return sorted(self._kind_index(kind))

    def path_of(self, kind: str, ref: str) -> Path:
        """The file a reference resolves to; raises :class:`ProfileNotFoundError`."""
        _check_kind(kind)
        if looks_like_path(ref):
            path = Path(ref).expanduser()
            if not path.is_file():
                raise ProfileNotFoundError(kind, ref, [])
            return path.resolve()
        index = self._kind_index(kind)
        if ref in index:
            return index[ref]
        raise ProfileNotFoundError(kind, ref, self.suggest(kind, ref))

    def suggest(self, kind: str, ref: str, limit: int = 3) -> list[str]:
        """Ids of ``kind`` that resemble ``ref`` (difflib close matches, then substrings)."""
        ids = self.ids(kind)
        matches = difflib.get_close_matches(ref.lower(), ids, n=limit, cutoff=0.6)
        if len(matches) < limit:
            needle = ref.lower()
            matches += [i for i in ids if needle and needle in i and i not in matches]
        return matches[:limit]

    def origin(self, path: Path) -> str:
        """``built-in``, or the user directory a profile file was found in."""
        resolved = path.resolve()
        for root in self.user_dirs:
            if resolved.is_relative_to(root.resolve()):
                return str(root)
        if resolved.is_relative_to(self.builtin_dir.resolve()):
            return "built-in"
        return str(path.parent)

    def kind_of(self, ref: str) -> list[str]:
        """Kinds that have a profile named ``ref`` (for a path: guessed from its content)."""
        if not looks_like_path(ref):
            return [kind for kind in KINDS if ref in self._kind_index(kind)]
        if config_path(ref) is not None:
            return ["models"]
        path = Path(ref).expanduser()
        if not path.is_file():
            raise ProfileNotFoundError(None, ref, [])
        if path.parent.name in KINDS:
            return [path.parent.name]
        data = load_yaml(path)
        if isinstance(data, dict):
            if "architecture" in data:
                return ["models"]
            if "scope" in data:
                return ["interconnects"]
            if "bf16_flops_per_s" in data:
                return ["gpus"]
            if "launch_defaults" in data or "engine" in data:
                return ["engines"]
        return []

    # ---- loading ------------------------------------------------------------------------
    def raw(self, kind: str, ref: str) -> tuple[Profile, Path]:
        """The validated profile object (with provenance) and the file it came from."""
        config = config_path(ref) if kind == "models" else None
        if config is not None:
            if (kind, config) not in self._profiles:
                from advisor.loading.hf_config import load_hf_profile

                self._profiles[(kind, config)] = load_hf_profile(config)
            else:
                note_read(config)
            return self._profiles[(kind, config)], config
        path = self.path_of(kind, ref)
        key = (kind, path)
        if key not in self._profiles:
            self._profiles[key] = load_profile(kind, path,
                                               expected_id=None if looks_like_path(ref)
                                               else path.stem)
        else:  # read once, a dependency of every result that uses it (a result cache)
            note_read(path)
        return self._profiles[key], path

    def _spec(self, kind: str, ref: str) -> Any:
        profile, path = self.raw(kind, ref)
        key = (kind, path)
        if key not in self._specs:
            self._specs[key] = profile.to_spec()
        return self._specs[key]

    def gpu(self, ref: str) -> GpuSpec:
        """The :class:`GpuSpec` of a GPU profile id or file."""
        spec: GpuSpec = self._spec("gpus", ref)
        return spec

    def link(self, ref: str) -> LinkSpec:
        """The :class:`LinkSpec` of an interconnect profile id or file."""
        spec: LinkSpec = self._spec("interconnects", ref)
        return spec

    def model(self, ref: str) -> ModelSpec:
        """The :class:`ModelSpec` of a model profile id or file, or of a ``config.json``."""
        spec: ModelSpec = self._spec("models", ref)
        return spec

    def engine(self, ref: str) -> EngineSpec:
        """The :class:`EngineSpec` of an engine profile id (``vllm`` = its current family)."""
        spec: EngineSpec = self._spec("engines", ref)
        return spec

    def engine_profile(self, ref: str) -> EngineProfile:
        """The validated engine profile object (with provenance)."""
        # Ignored below: raw() is typed by the union of profiles; the engines kind always yields an
        # EngineProfile.
        return self.raw("engines", ref)[0]  # type: ignore[return-value]

    def engine_families(self, engine: str) -> list[tuple[str, str]]:
        """(profile id, version range) of every profile of ``engine``, valid ones only."""
        families = []
        for pid in self.ids("engines"):
            try:
                profile = self.engine_profile(pid)
            except (ProfileNotFoundError, ProfileInvalidError):
                continue
            if profile.engine == engine:
                families.append((pid, profile.versions))
        return families

    def engine_for(self, engine: str, version: str | None = None) -> EngineSpec:
        """The engine profile for ``engine`` at ``version``.

        No version: the profile whose id is the engine name (its current family). A version:
        the profile of that engine whose ``versions`` range covers it; when several do, the
        one with the highest lower bound. Raises :class:`ProfileNotFoundError` (no such
        engine) or :class:`EngineVersionError` (no family covers the version).
        """
        from advisor.loading.engine_profile import covers, parse_versions

        if version is None:
            return self.engine(engine)
        families = self.engine_families(engine)
        if not families and engine not in ENGINE_NAMES:
            raise ProfileNotFoundError("engines", engine, self.suggest("engines", engine))
        matching = [(parse_versions(versions)[0] or (), pid) for pid, versions in families
                    if covers(versions, version)]
        if not matching:
            raise EngineVersionError(engine, version, families)
        return self.engine(max(matching)[1])


# ---- YAML ---------------------------------------------------------------------------------
def _yaml_loader() -> type:
    """A safe YAML loader (C-accelerated when available) that rejects duplicate keys."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    # Ignored below: the base is chosen at run time (CSafeLoader when libyaml is there), not a
    # static class.
    class _UniqueKeyLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key!r} (first defined at line "
                        f"{seen[key].line + 1})", key_node.start_mark)
                seen[key] = key_node.start_mark
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    return _UniqueKeyLoader


_LOADER: type | None = None


def load_yaml(path: Path) -> Any:
    """Parse one YAML file; any problem raises :class:`ProfileInvalidError` (see
    :func:`load_yaml_text`)."""
    return load_yaml_text(path)[0]


def load_yaml_text(path: Path) -> tuple[Any, str]:
    """The data of one YAML file and its text, read once (problems are located in the text
    that was parsed, never in a second read); any problem raises :class:`ProfileInvalidError`.

    Profiles and calibration overlays get the protections of workload files
    (:mod:`advisor.loading.yaml_source`): only a regular file is read (a FIFO in a profile
    directory is reported, never opened), at most 1 MiB of it, and documents that expand
    past the alias or nesting limits, recursive aliases and non-plain-data tags are refused
    with their position. Syntax errors and duplicate keys are reported likewise.
    """
    import yaml

    from advisor.loading.yaml_source import UnreadableFileError, compose_guarded, read_yaml_text

    global _LOADER
    if _LOADER is None:
        _LOADER = _yaml_loader()
    try:  # regular files only: a FIFO found in a profile directory would block (#33)
        text = read_yaml_text(path, regular_only=True)
    except UnreadableFileError as exc:
        raise ProfileInvalidError(path, [f"{exc.line}:{exc.col}: {exc.message}"]) from None
    loader = _LOADER(text)
    try:
        composed = compose_guarded(loader)
        if composed.tag_errors:
            raise ProfileInvalidError(path, [_yaml_problem(e) for e in composed.tag_errors])
        data = loader.construct_document(composed.root) if composed.root is not None else None
        return data, text
    except yaml.MarkedYAMLError as exc:
        raise ProfileInvalidError(path, [_yaml_problem(exc)]) from None
    except yaml.YAMLError as exc:
        raise ProfileInvalidError(path, [f"YAML error: {exc}"]) from None
    finally:
        loader.dispose()


def _yaml_problem(exc: Any) -> str:
    """``LINE:COL: YAML error: ...`` for a PyYAML error with a position."""
    mark = exc.problem_mark or exc.context_mark
    where = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
    problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    return f"{where}YAML error: {problem}"


def load_profile(kind: str, path: Path, expected_id: str | None = None) -> Profile:
    """Read and validate one profile file; every problem is reported in one error.

    ``expected_id`` (the file name for catalog lookups) must match the ``id:`` key.
    """
    from pydantic import ValidationError

    from advisor.loading.profile_schema import parse_profile
    from advisor.loading.yaml_source import key_position

    _check_kind(kind)
    data, text = load_yaml_text(path)
    if not isinstance(data, dict):
        raise ProfileInvalidError(path, ["1:1: expected a mapping of profile keys at the top "
                                         f"level, got {type(data).__name__}"])
    try:
        if kind == "engines":
            from advisor.loading.engine_profile import EngineProfile

            # Ignored below: EngineProfile is kept out of the Profile union (imported lazily);
            # callers narrow by kind.
            profile: Profile = EngineProfile.model_validate(data)  # type: ignore[assignment]
        else:
            profile = parse_profile(kind, data)
    except ValidationError as exc:
        problems: list[tuple[int, int, str]] = []
        for error in exc.errors(include_url=False):
            loc = [p for p in error["loc"] if not (isinstance(p, str) and "[" in p)]
            dotted = ".".join(str(p) for p in loc) or "(top level)"
            pos = key_position(text, loc)
            line, col = pos if pos is not None else (0, 0)
            problems.append((line, col, f"{dotted}: {error['msg']}"))
        problems.sort(key=lambda p: (p[0], p[1]))
        raise ProfileInvalidError(
            path, [f"{ln}:{col}: {msg}" if ln else msg for ln, col, msg in problems]) from None
    if expected_id is not None and profile.id != expected_id:
        pos = key_position(text, ["id"]) or (1, 1)
        raise ProfileInvalidError(path, [f"{pos[0]}:{pos[1]}: id: '{profile.id}' does not "
                                         f"match the file name '{path.name}'"])
    return profile
