"""The one output rule of every command (issue 18), checked before any work by ``check_output``:

an output path may be **new**, an **empty folder**, or a folder (file) that **the same command
wrote before** — recorded in ``forgetless-run.json`` (for a file output, a ``written_by`` key; for
``forgetless.apply``'s model folder, its manifest's ``streamed`` entry) —
which a resumable command (``compress``, ``finetune``, ``sweep``) continues and any other command
replaces only with ``--overwrite``. It is never an existing foreign file, a model folder, a folder
holding files forgetless did not write, ``/``, an input (model, teacher, data file, recipe), a
parent of an input, or the forgetless cache (or a folder inside or around it). Replacing an old
output moves it aside first (``fsutil.atomic_directory``); nothing forgetless did not create is
ever deleted.

``output_lock`` holds a lock per output folder for the whole command: a second run on the same
folder stops with a clear error instead of training into the same ``work/`` at once (``model_folder_lock``:
the same for a model folder written whole, ``forgetless.apply_streamed``'s);
``claim_output`` also removes a folder the command created when it stops on a bad input.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from .errors import DiskFullError, ForgetlessError, OutputFolderError
from .fsutil import atomic_write_json

RUN_FILE = "forgetless-run.json"  # which command (and for compress: which run) owns an output folder
LOCK_FILE = ".forgetless.lock"
WRITTEN_BY = "written_by"         # key of a JSON output file naming the command that wrote it
RESUMABLE = ("compress", "finetune", "sweep")
MODEL_FILES = ("config.json", "forgetless.json", "model.safetensors", "model.safetensors.index.json",
               "pytorch_model.bin", "tokenizer_config.json")
LEGACY = {"compress": ("report.json", "model", "work"), "sweep": ("sweep.json", "runs")}  # before RUN_FILE
IGNORED = (LOCK_FILE, ".DS_Store")
MAX_JSON_OUTPUT = 50_000_000


def cache_root() -> Path:
    """The shared cache folder: ``$FORGETLESS_CACHE``, default ``~/.cache/forgetless``."""
    return Path(os.environ.get("FORGETLESS_CACHE") or Path.home() / ".cache" / "forgetless").expanduser()


def _name_limits(path: Path, flag: str, out) -> None:
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise OutputFolderError(f"{flag} {out}: the name {part[:40]}… is {len(os.fsencode(part))} bytes long; "
                                    "file names are limited to 255 bytes")
    if len(os.fsencode(str(path))) > 4000:
        raise OutputFolderError(f"{flag} {out}: the path is longer than 4000 bytes")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _check_inputs(path: Path, flag: str, out, inputs: Mapping[str, object], what: str) -> None:
    real = Path(os.path.realpath(path))
    if str(real) == real.anchor:
        raise OutputFolderError(f"{flag} {out}: is the root folder; name a new {what} for the output")
    cache = Path(os.path.realpath(cache_root()))
    if _inside(real, cache) or _inside(cache, real):
        raise OutputFolderError(f"{flag} {out}: is {'inside' if _inside(real, cache) else 'a parent of'} the "
                                f"forgetless cache {cache} ($FORGETLESS_CACHE); choose another folder")
    for name, value in inputs.items():
        if not value or not Path(str(value)).expanduser().exists():
            continue  # a hub id or a built-in name: nothing on disk to protect
        source = Path(os.path.realpath(Path(str(value)).expanduser()))
        if source == real:
            raise OutputFolderError(f"{flag} {out}: is an input of this command ({name} {value}); "
                                    f"name a new {what} for the output")
        if real in source.parents:
            raise OutputFolderError(f"{flag} {out}: contains an input of this command ({name} {value}); "
                                    f"name a new {what} for the output")


def read_mark(folder: Path) -> dict | None:
    """The ``forgetless-run.json`` of an output folder (None: absent; unreadable: another run)."""
    file = folder / RUN_FILE
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return {"command": "compress", "key": None}
    if not isinstance(data, dict):
        return {"command": "compress", "key": None}
    return {"command": "compress", **data}  # folders of compress runs before the command was recorded


def _check_folder(path: Path, flag: str, out, command: str, overwrite: bool) -> None:
    entries = [p for p in path.iterdir() if p.name not in IGNORED]
    if not entries:
        return
    mark = read_mark(path)
    if mark is not None:
        if mark.get("command") != command:
            raise OutputFolderError(f"{flag} {out}: holds the output of `forgetless {mark.get('command')}`, not of "
                                    f"`forgetless {command}`; choose another folder")
        if command not in RESUMABLE and not overwrite:
            raise OutputFolderError(f"{flag} {out}: holds the output of an earlier `forgetless {command}`; "
                                    "pass --overwrite to replace it")
        return
    if command == "apply" and _written_by_apply(path):
        if not overwrite:
            raise OutputFolderError(f"{flag} {out}: holds the model of an earlier `forgetless.apply`; pass --overwrite "
                                    "to replace it")
        return
    if any((path / name).exists() for name in MODEL_FILES):
        raise OutputFolderError(f"{flag} {out}: holds a model (config.json), not a forgetless run; "
                                "choose another folder (a model folder is never written into)")
    if any((path / name).exists() for name in LEGACY.get(command, ())):
        if command == "compress" and not overwrite:
            raise OutputFolderError(f"{flag} {out}: holds the output of a run this version cannot identify; "
                                    "choose another folder or pass --overwrite")
        return
    raise OutputFolderError(f"{flag} {out}: holds {len(entries)} file(s) forgetless did not write "
                            f"(e.g. {sorted(p.name for p in entries)[0]}); name a new or empty folder")


def _written_by_apply(path: Path) -> bool:
    """A model folder streamed calibration wrote (its manifest records ``streamed``): ``apply``'s output."""
    try:
        manifest = json.loads((path / "forgetless.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and isinstance(manifest.get("metadata"), dict) and \
        "streamed" in manifest["metadata"]


def _check_file(path: Path, flag: str, out, command: str, overwrite: bool) -> None:
    try:
        ours = path.stat().st_size < MAX_JSON_OUTPUT and json.loads(path.read_bytes()).get(WRITTEN_BY) == \
            f"forgetless {command}"
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise OutputFolderError(f"{flag} {out}: is an existing file forgetless did not write; name a new file")
    if not overwrite:
        raise OutputFolderError(f"{flag} {out}: holds the output of an earlier `forgetless {command}`; "
                                "pass --overwrite to replace it")


def check_output(out, flag: str = "--out", *, command: str, inputs: Mapping[str, object] | None = None,
                 overwrite: bool = False, is_file: bool = False) -> Path:
    """Check an output path against the rule in the module docstring before any work; returns it.
    ``inputs``: ``{"--model": path, ...}``, every path the command reads. Writes nothing that
    stays (a write probe in the nearest existing folder is removed at once)."""
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise OutputFolderError(f"{flag} {out!r}: expected a path, got {type(out).__name__}")
    if out is None or not str(out).strip():
        raise OutputFolderError(f"{flag} '': name an output {'file' if is_file else 'folder'} "
                                "(an empty name would write into the current folder)")
    path = Path(out).expanduser()
    _name_limits(Path(os.path.abspath(path)), flag, out)
    if path.is_symlink() and not path.exists():
        raise OutputFolderError(f"{flag} {out}: is a dangling symbolic link (to {os.readlink(path)}); "
                                "name a new path")
    _check_inputs(path, flag, out, inputs or {}, "file" if is_file else "folder")
    if path.exists():
        if is_file and path.is_dir():
            raise OutputFolderError(f"{flag} {out}: is a folder; name a file")
        if not is_file and not path.is_dir():
            raise OutputFolderError(f"{flag} {out}: is an existing file; name a folder")
        (_check_file if is_file else _check_folder)(path, flag, out, command, overwrite)
    ancestor = path.parent if is_file else path
    while not ancestor.exists():
        if ancestor.is_symlink():
            raise OutputFolderError(f"{flag} {out}: {ancestor} is a dangling symbolic link")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputFolderError(f"{flag} {out}: {ancestor} is a file, so nothing can be written inside it")
    try:
        probe_writable(ancestor)
    except OSError as exc:
        raise OutputFolderError(f"{flag} {out}: cannot write in {ancestor} ({exc.strerror or exc}); "
                                "choose a writable folder") from exc
    return path


def probe_writable(folder: Path) -> None:
    """Create and remove an empty folder in ``folder``: raises the ``OSError`` of a folder that
    cannot be written (permissions, read-only file system), before any work."""
    os.rmdir(tempfile.mkdtemp(prefix=".forgetless-probe-", dir=folder))


def mark_output(folder, command: str, **extra) -> None:
    """Record that ``command`` owns ``folder`` (``forgetless-run.json``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / RUN_FILE, {"command": command, **extra})


def distributed_follower() -> bool:
    """Whether this is a non-first process of a distributed launch (accelerate / torchrun set
    ``RANK`` and ``LOCAL_RANK``): locks are the first process's, or the ranks would lock each other
    out (output) or deadlock (a teacher trained by all ranks together)."""
    return any(int(os.environ.get(name, "0") or 0) > 0 for name in ("RANK", "LOCAL_RANK"))


@contextlib.contextmanager
def _file_lock(path: Path, busy) -> Iterator[None]:
    """Hold the lock file ``path``; when another process holds it, ``busy(exc)`` raises or announces
    a wait. In a distributed launch only the first process takes it (the others belong to the same run)."""
    from filelock import FileLock, Timeout

    if distributed_follower():
        yield
        return
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        busy(exc)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def output_lock(folder, flag: str = "--out") -> Iterator[Path]:
    """Hold ``folder/.forgetless.lock`` (created with the folder) while the command writes into it;
    a second process gets an ``OutputFolderError`` at once."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def busy(exc):
        raise OutputFolderError(f"{flag} {folder}: another forgetless run is writing into it (it holds "
                                f"{folder / LOCK_FILE}); wait for it to finish or choose another folder") from exc

    with _file_lock(folder / LOCK_FILE, busy):
        yield folder


@contextlib.contextmanager
def model_folder_lock(folder, flag: str = "--out") -> Iterator[Path]:
    """Hold a lock beside the model folder ``folder`` (``.NAME.forgetless-lock`` in its parent) while it is
    written: the folder is replaced whole when done (``fsutil.atomic_directory``), so its lock cannot live
    inside it. A second process (or thread) gets an ``OutputFolderError`` at once; the lock file is removed
    on release (one a kill left is taken over by the next run)."""
    folder = Path(folder).expanduser()
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = folder.parent / f".{folder.name}.forgetless-lock"

    def busy(exc):
        raise OutputFolderError(f"{flag} {folder}: another forgetless run is writing this model folder (it holds "
                                f"{lock}); wait for it to finish or choose another folder") from exc

    with _file_lock(lock, busy):
        try:
            yield folder
        finally:
            lock.unlink(missing_ok=True)  # while held: a waiting run finds no file, or a new one, never a stale lock


@contextlib.contextmanager
def claim_output(folder, flag: str = "--out") -> Iterator[Path]:
    """``output_lock`` for a command that may create ``folder``: when it stops with a
    ``ForgetlessError`` (an input found wrong only now) a folder that was absent or empty is left so
    again, so a refused run leaves nothing behind (and its corrected rerun does not meet "the output
    of a different run"). A full disk keeps what was written: the same command resumes from there."""
    folder = Path(folder)
    created = not folder.exists()
    empty = not created and folder.is_dir() and not any(folder.iterdir())
    with output_lock(folder, flag):
        try:
            yield folder
        except ForgetlessError as exc:
            if (created or empty) and not isinstance(exc, DiskFullError):
                for path in ([folder] if created else [p for p in folder.iterdir() if p.name != LOCK_FILE]):
                    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
            raise


def check_cache(flag: str = "FORGETLESS_CACHE") -> Path:
    """The teacher cache is a writable folder (or can be made): checked before a teacher is trained."""
    root = cache_root()
    probe = root
    while not probe.exists() and not probe.is_symlink():
        probe = probe.parent
    if not probe.is_dir():
        what = "is a file" if probe == root else f"is inside the file {probe}"
        raise OutputFolderError(f"{flag}={root}: {what}; point it to a folder")
    try:
        probe_writable(probe)
    except OSError as exc:
        raise OutputFolderError(f"{flag}={root}: cannot write in {probe} ({exc.strerror or exc}); point it to "
                                "a writable folder") from exc
    return root


@contextlib.contextmanager
def teacher_lock(folder) -> Iterator[None]:
    """Hold ``<cache>/teachers/.<key>.lock`` while a cached teacher is checked, trained and saved: a
    second run needing the same teacher waits (with a message), then finds it and reuses it."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(folder.parent / f".{folder.name}.lock", lambda exc: print(
            f"[forgetless] waiting for another run training the same teacher ({folder})", file=sys.stderr, flush=True)):
        yield
