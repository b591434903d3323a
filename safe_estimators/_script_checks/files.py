"""Reading the entry point and finding the local modules it imports, as Python would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from safe_estimators._script_checks.findings import Finding
from safe_estimators._script_checks.summary import _Module, _parse

# A 10,000-line script is ~400 kB; past this size we refuse rather than stall a build.
_MAX_BYTES = 2_000_000


def _load(path: Path, shown: str, *, required: bool) -> _Module | Finding:
    try:
        if not path.is_file():
            raise FileNotFoundError("not a regular file" if path.exists() else "no such file")
        size = path.stat().st_size
        if size > _MAX_BYTES:
            return _too_large(shown, size)
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Finding(
            shown, 0, "error" if required else "warning", "unreadable",
            f"cannot read {'the entry point' if required else 'this local module'} ({reason}); "
            "it was not checked.",
            "check the path (it is relative to source_dir when one is given) and permissions.",
        )
    # Bytes, not text: ast.parse then honours a PEP 263 coding line and a BOM like Python does.
    return _parse(data, shown, path)


def _too_large(shown: str, size: int) -> Finding:
    return Finding(
        shown, 0, "warning", "script-too-large",
        f"the file is {size:,} bytes, over the {_MAX_BYTES:,} the checks read; it was not "
        "checked.",
        "check it by hand, or split generated code out of the entry point.",
    )


def _search_roots(path: Path, base: Path | None) -> list[Path]:
    # sys.path[0] is the script's directory; SageMaker also puts source_dir on the path.
    roots = [_real(path).parent]
    if base is not None and _real(base) not in roots:
        roots.append(_real(base))
    return roots


def _local_imports(module: _Module, roots: list[Path]) -> Iterator[Path]:
    """Files of local modules (and the packages around them) that ``module`` imports."""
    if module.path is None:
        return
    here = _real(module.path).parent
    for name, names, level in module.raw_imports:
        parts = [p for p in name.split(".") if p]
        if level:
            base = here
            for _ in range(level - 1):
                base = base.parent
            if not any(base == r or r in base.parents for r in roots):
                continue
            bases = [base]
        else:
            if not parts:
                continue
            # Like Python: the first root that has the top-level package or module.
            bases = [
                r for r in roots
                if (r / f"{parts[0]}.py").is_file() or (r / parts[0] / "__init__.py").is_file()
            ][:1]
        for base in bases:
            directory = base
            for part in parts:
                yield from _module_files(directory, part)
                directory = directory / part
            for sub in names:
                if sub != "*":
                    yield from _module_files(directory, sub)


def _module_files(directory: Path, name: str) -> Iterator[Path]:
    for candidate in (directory / f"{name}.py", directory / name / "__init__.py"):
        if candidate.is_file():
            yield candidate


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # symlink loops
        return path.absolute()


def _display_name(path: Path, base: Path | None, given: Path) -> str:
    if base is not None:
        try:
            return _real(path).relative_to(_real(base)).as_posix()
        except ValueError:
            pass
    return given.as_posix()


def _helper_name(real: Path, name_roots: list[tuple[Path, Path]]) -> str:
    for root, shown_root in name_roots:
        try:
            rel = real.relative_to(root)
        except ValueError:
            continue
        return rel.as_posix() if shown_root == Path(".") else (shown_root / rel).as_posix()
    return real.as_posix()
