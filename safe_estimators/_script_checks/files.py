"""Reading the entry point and finding the local modules it imports, as Python would."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from safe_estimators._script_checks.findings import Finding
from safe_estimators._script_checks.summary import _Module, _parse

# A 10,000-line script is ~400 kB; past this size the file is left unchecked (a warning) rather
# than stall a build: dense code (`x = 1` lines) costs up to ~400 MB of syntax tree and ~4-10 s
# per MB on a busy CI core.
_MAX_BYTES = 500_000
# All files of one check together, for the same reason; a real training program (entry point
# and its local modules) is well under this.
_MAX_TOTAL_BYTES = 750_000
# Local modules followed from one entry point (a guard against huge source trees, not a limit
# anyone should meet).
_MAX_FILES = 200


class _Budget:
    """What one check may still read: files and bytes, across the entry point and its modules."""

    def __init__(self) -> None:
        self.files = _MAX_FILES
        self.bytes = _MAX_TOTAL_BYTES
        self.exhausted = False

    def take(self, size: int) -> bool:
        if self.files <= 0 or size > self.bytes:
            self.exhausted = True
            return False
        self.files -= 1
        self.bytes -= size
        return True

    def finding(self, shown: str) -> Finding:
        """The checks read a bounded number of files and bytes per entry point: local modules
        past the budget are not checked (a warning)."""
        return Finding(
            shown, 0, "warning", "script-budget",
            f"the checks read at most {_MAX_FILES} files and {_MAX_TOTAL_BYTES:,} bytes of "
            "Python per entry point; the remaining local modules were not checked.",
            "check them by hand, or move generated code out of the imported modules.",
        )  # fmt: skip


class _Reads:
    """The paths a load's result depends on: the files it read or tried to, the folders it looked
    for modules in, and what those probes found (``memo`` stamps each of them)."""

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: set[str] = set()

    def add(self, path: Path) -> None:
        self.paths.add(os.path.abspath(path))

    def is_file(self, path: Path) -> bool:
        self.add(path.parent)
        found = path.is_file()
        if found:  # a link's target is stamped through it
            self.add(path)
        return found

    def is_dir(self, path: Path) -> bool:
        self.add(path.parent)
        found = path.is_dir()
        if found:
            self.add(path)
        return found


def _inside(real: Path, roots: list[Path]) -> bool:
    return any(real == root or root in real.parents for root in roots)


def _load(
    path: Path,
    shown: str,
    *,
    required: bool,
    roots: list[Path] | None = None,
    budget: _Budget | None = None,
    reads: _Reads | None = None,
) -> _Module | Finding:
    """A local module is read only where it is inside source_dir or the entry point's folder: a
    link that leaves them (to ~/.netrc, /etc/passwd) is never read, and is reported, as
    SageMaker would upload what it points to."""
    if reads is not None:
        reads.add(path)
        reads.add(path.parent)
    real = _real(path)
    if roots is not None and not _inside(real, roots):
        # A link that leaves source_dir (to ~/.netrc, /etc/passwd): never read, never quoted.
        return Finding(
            shown, 0, "error" if required else "warning", "outside-source",
            "is a link to a file outside source_dir and the entry point's folder; it was not "
            "read (SageMaker would upload what it points to).",
            "replace the link with the file itself, or remove it.",
        )  # fmt: skip
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise FileNotFoundError("not a regular file")
            if info.st_size > _MAX_BYTES:
                return _too_large(shown, info.st_size)
            if budget is not None and not budget.take(info.st_size):
                return budget.finding(shown)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(_MAX_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > _MAX_BYTES:
            return _too_large(shown, len(data))
    except FileNotFoundError as exc:
        reason = "no such file" if not path.exists() else str(exc.args[0] if exc.args else exc)
        return _unreadable(shown, required, reason)
    except OSError as exc:
        return _unreadable(shown, required, exc.strerror or type(exc).__name__)
    # Bytes, not text: ast.parse then honours a PEP 263 coding line and a BOM like Python does.
    return _parse(data, shown, path)


def _unreadable(shown: str, required: bool, reason: str) -> Finding:
    """A file the checks cannot read (missing, not a regular file, no permission) is not
    checked: an error for the entry point, which the job runs, a warning for a local module."""
    return Finding(
        shown, 0, "error" if required else "warning", "unreadable",
        f"cannot read {'the entry point' if required else 'this local module'} ({reason}); "
        "it was not checked.",
        "check the path (it is relative to source_dir when one is given) and permissions.",
    )  # fmt: skip


def _too_large(shown: str, size: int) -> Finding:
    """A file larger than the checks read is not checked (a warning)."""
    return Finding(
        shown, 0, "warning", "script-too-large",
        f"the file is {size:,} bytes, over the {_MAX_BYTES:,} the checks read; it was not "
        "checked.",
        "check it by hand, or split generated code out of the entry point.",
    )


def _search_roots(path: Path, base: Path | None) -> list[Path]:
    # sys.path[0] is the script's directory; SageMaker also puts source_dir on the path. The
    # folder as named, not where a linked entry point leads: the checks read nothing outside.
    roots = [_real(path.parent)]
    if base is not None and _real(base) not in roots:
        roots.append(_real(base))
    return roots


def _local_imports(module: _Module, roots: list[Path], reads: _Reads) -> Iterator[Path]:
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
            # Like Python: the first root that has the top-level package or module, else a
            # folder of that name (a namespace package, as a Megatron-LM checkout's megatron/).
            bases = [r for r in roots if _local_top(r, parts[0], reads)][:1]
        for base in bases:
            directory = base
            for part in parts:
                yield from _module_files(directory, part, reads)
                directory = directory / part
            for sub in names:
                if sub != "*":
                    yield from _module_files(directory, sub, reads)


def _local_top(root: Path, name: str, reads: _Reads) -> bool:
    """``import name`` finds a module, a package or a namespace package's folder in ``root``."""
    return reads.is_file(root / f"{name}.py") or reads.is_dir(root / name)


def _module_files(directory: Path, name: str, reads: _Reads) -> Iterator[Path]:
    for candidate in (directory / f"{name}.py", directory / name / "__init__.py"):
        if reads.is_file(candidate):
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
