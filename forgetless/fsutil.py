"""Atomic writes: build output in a temporary sibling, then rename, so an interrupted run never
leaves a half-written folder or file that looks complete; a full disk during any write is one
``DiskFullError`` naming the folder and its free space (``disk_full_guard``), and the temporary
sibling is removed. A kill -9 leaves it: its name records the host and process that made it
(``.NAME.tmp-<host>-<pid>-<random>``), so the next write of ``NAME`` removes the siblings of ``NAME``
whose process is gone (``remove_dead_siblings``: only forgetless's own names, never a live writer's);
a run holding its output folder's lock removes every leftover there (``remove_leftovers``). The
JSON-lines files forgetless reads (predictions, offline LLM sets) are parsed by one ``json_lines``."""
from __future__ import annotations

import contextlib
import errno
import json
import hashlib
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from .errors import DataError, DiskFullError

# how a full disk shows through libraries that drop errno: safetensors' message, torch's zip writer (a
# failed write, or on a small file system the short write it finds afterwards: "[enforce fail at
# inline_container.cc:672] . unexpected pos 9664 vs 9556", raised while handling "basic_ios::clear")
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]  # temporary names: which host made them
FULL_DISK_MESSAGES = ("No space left on device", "Disk quota exceeded", "PytorchStreamWriter failed writing",
                      "file write failed", "] . unexpected pos ")


def free_space(path) -> str:
    """Free space of the file system holding ``path`` (its nearest existing ancestor), for messages."""
    probe = Path(path).expanduser()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return f"{shutil.disk_usage(probe).free / 2**20:.1f} MiB"
    except OSError:
        return "unknown space"


def check_free_space(folder, needed: int, what: str, advice: str) -> None:
    """``DiskFullError`` before any work when the disk of ``folder`` (its nearest existing ancestor: it may not
    exist yet) has less than ``needed`` bytes free: "<what> needs N GB free in <folder>, the disk has M GB;
    <advice>"."""
    existing = Path(folder).expanduser()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise DiskFullError(f"{what} needs {needed / 1e9:.2f} GB free in {folder}, the disk has {free / 1e9:.2f} GB; "
                            f"{advice}")


def is_disk_full(exc: BaseException) -> bool:
    """``exc`` (or an exception it was raised from) is a full disk or an exceeded quota."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(message in str(exc) for message in FULL_DISK_MESSAGES):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def disk_full_guard(folder, doing: str = "writing into", advice: str = "rerun the same command (it resumes)"):
    """Turn a full disk inside the block into ``DiskFullError("disk full while <doing> <folder> (<free>
    free); free some space and <advice>")``."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as exc:  # noqa: BLE001 - only full disks are translated; everything else re-raised
        if not is_disk_full(exc):
            raise
        raise DiskFullError(f"disk full while {doing} {folder} ({free_space(folder)} free); free some space "
                            f"and {advice}") from exc


def remove_leftovers(folder, names: tuple[str, ...] = (".*.tmp-*", ".*.old-*"), min_age_s: float = 0) -> int:
    """Delete the temporary siblings (``.NAME.tmp-*``, ``.NAME.old-*``) an interrupted write left in
    ``folder`` (only forgetless's own names; only those older than ``min_age_s``: call it while
    holding the folder's lock, or with an age no running writer reaches); returns how many."""
    folder, removed = Path(folder), 0
    if not folder.is_dir():
        return 0
    for pattern in names:
        for path in folder.glob(pattern):
            try:
                old = time.time() - path.lstat().st_mtime >= min_age_s
            except OSError:
                continue
            if old:
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() and not path.is_symlink() else \
                    path.unlink(missing_ok=True)
                removed += 1
    return removed


def temporary_prefix(path: Path, kind: str = "tmp") -> str:
    """``.NAME.tmp-<host>-<pid>-``: the prefix of the temporary siblings this process makes for ``path``."""
    return f".{path.name}.{kind}-{_HOST}-{os.getpid()}-"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or a number no process has: kept, to be safe)
    return True


def remove_dead_siblings(path: str | os.PathLike) -> int:
    """Remove the temporary siblings of ``path`` (``.NAME.tmp-<host>-<pid>-*``, and ``.NAME.old-…`` once
    ``path`` exists again) that a process of this host made and that is gone (a kill -9 while
    writing): never a live writer's, another host's or a name forgetless does not give. Returns how
    many were removed."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(tmp|old)-{_HOST}-(\d+)-[\w]*$")
    removed = 0
    if not path.parent.is_dir():
        return 0
    for sibling in path.parent.glob(f".{glob_escape(path.name)}.*-{_HOST}-*"):
        match = pattern.match(sibling.name)
        if match is None or _process_alive(int(match.group(2))) or (match.group(1) == "old" and not path.exists()):
            continue  # an .old- whose rename was cut short holds the only complete copy: kept
        shutil.rmtree(sibling, ignore_errors=True) if sibling.is_dir() and not sibling.is_symlink() else \
            sibling.unlink(missing_ok=True)
        removed += 1
    return removed


def glob_escape(name: str) -> str:
    """``name`` with the characters ``glob`` reads as patterns escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def usual_mode(directory: bool = False) -> int:
    """The mode a plain ``open`` / ``mkdir`` gives (0644 / 0755 under the usual umask 022): temporary
    files and folders are created 0600 / 0700, which a teammate or a web server could not read."""
    return (0o777 if directory else 0o666) & ~_umask()


def usual_modes(folder: Path) -> None:
    """Every file and folder below ``folder`` gets ``usual_mode``: what the libraries writing into a
    temporary folder leave differs (safetensors' ``save_file`` 0600, a plain ``open`` 0644), the
    user's umask decides alone."""
    file_mode, folder_mode = usual_mode(), usual_mode(directory=True)
    for root, folders, files in os.walk(folder):
        for name in folders:
            os.chmod(Path(root) / name, folder_mode)
        for name in files:
            if not (Path(root) / name).is_symlink():
                os.chmod(Path(root) / name, file_mode)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; on success it replaces ``path`` by rename, every file
    in it with the mode the user's umask gives (``usual_modes``)."""
    path = Path(path)
    with disk_full_guard(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_siblings(path)
        tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(path), dir=path.parent))
        os.chmod(tmp, usual_mode(directory=True))
    try:
        with disk_full_guard(path.parent):
            yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    usual_modes(tmp)
    old = None
    if path.exists():
        old = path.parent / f"{temporary_prefix(path, 'old')}{os.urandom(4).hex()}"
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    with disk_full_guard(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_siblings(path)
        fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path), dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, usual_mode())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_jsonable) + "\n")


def json_digest(value: Any) -> str:
    """The sha256 (hex) of ``value`` as JSON, keys sorted, what JSON cannot hold as its text: the key of a
    cached result or of a run."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def json_lines(text: str, path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each non-blank line of a JSON-lines ``text`` read from ``path``;
    a line that is not a JSON object is a ``DataError`` naming the file and line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} line {number}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise DataError(f"{path} line {number}: expected a JSON object")
        yield number, row
