"""Strict JSON reading and atomic writing.

Python's ``json`` module accepts ``NaN``, ``Infinity``, duplicate keys and
numbers that overflow a float.  An instance file with any of those is almost
certainly a bug in whatever exported it, so the reader rejects them and names
the JSON path where they occur.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ..errors import InputError, WriteRefusedError

__all__ = [
    "read_json", "read_bytes", "read_text", "decode_text", "parse_json", "write_atomic", "make_output_dir", "check_destination",
    "json_path",
    "MAX_INPUT_BYTES",
]

#: Largest file the readers accept: parsing JSON takes about ten times its size in memory.
MAX_INPUT_BYTES = 2**30


class _NonFinite:
    """Placeholder for NaN/Infinity literals, located after parsing."""

    __slots__ = ("literal",)

    def __init__(self, literal: str):
        self.literal = literal


class _DuplicateKeys(dict):
    """An object whose source text repeated a key; remembered to report its path."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict = {}
    duplicates = []
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    if duplicates:
        marked = _DuplicateKeys(obj)
        marked.duplicates = duplicates
        return marked
    return obj


def _parse_float(text: str) -> Any:
    value = float(text)
    if not math.isfinite(value):
        return _NonFinite(text)
    return value


def _parse_int(text: str) -> Any:
    if len(text) > 20:  # beyond any 64-bit integer; int() of a very long literal is slow or refused
        return _NonFinite(text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)")
    value = int(text)
    if abs(value) > 2**63:
        # Python ints do not overflow, but every consumer converts to float64/int64.
        return _NonFinite(text)
    return value


def json_path(parts) -> str:
    """Render a sequence of keys and indices as ``$.a[0].b``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + json.dumps(part) + "]"
    return out


def _surrogate(text: str) -> str | None:
    """The problem with a string holding a lone surrogate (JSON ``"\\ud800"`` parses into one), else None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"not valid Unicode text: lone surrogate {text[exc.start]!r} at character {exc.start}"
    return None


def _find_problem(node: Any, parts: list) -> tuple[str, str] | None:
    if isinstance(node, _NonFinite):
        return json_path(parts), (
            f"number {node.literal} is not finite or overflows; numbers must be finite"
        )
    if isinstance(node, str):
        problem = _surrogate(node)
        return (json_path(parts), problem) if problem else None
    if isinstance(node, dict):
        if isinstance(node, _DuplicateKeys):
            return json_path(parts), f"duplicate key {node.duplicates[0]!r}"
        for key, value in node.items():
            problem = _surrogate(key)
            if problem:
                return json_path(parts), f"key {key.encode('utf-8', 'backslashreplace').decode()}: {problem}"
            found = _find_problem(value, parts + [key])
            if found:
                return found
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found = _find_problem(value, parts + [index])
            if found:
                return found
    return None


def parse_json(text: str, source: str = "<string>") -> Any:
    """Parse ``text`` strictly; raise :class:`InputError` naming ``source`` and the JSON path."""
    try:
        data = json.loads(
            text,
            parse_float=_parse_float,
            parse_int=_parse_int,
            parse_constant=_NonFinite,
            object_pairs_hook=_object_pairs,
        )
    except json.JSONDecodeError as exc:
        raise InputError(
            # Some of json's messages end in "at" themselves ("Unterminated string starting at").
            f"not valid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}",
            source=source,
            path="$",
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=source, path="$") from None
    except ValueError as exc:  # e.g. a number literal the float parser refuses
        raise InputError(f"not valid JSON: {exc}", source=source, path="$") from None
    problem = _find_problem(data, [])
    if problem:
        raise InputError(problem[1], source=source, path=problem[0])
    return data


def read_bytes(path: str | os.PathLike, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (``-``: standard input), at most ``limit`` of them.

    Devices, FIFOs, sockets and directories are refused without blocking: the
    file is opened non-blocking and checked with ``fstat`` before any read.
    """
    import stat
    import sys

    limit = MAX_INPUT_BYTES if limit is None else limit
    source = str(path)
    if source == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise InputError(f"standard input is larger than the {limit} bytes accepted", source=source, path="$")
        return data
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file not found", source=source, path="$") from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=source, path="$") from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source, path="$") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError("is a directory, not a file", source=source, path="$")
        if not stat.S_ISREG(info.st_mode):
            raise InputError("is not a regular file (a device, FIFO or socket); only regular files are read",
                             source=source, path="$")
        if info.st_size > limit:
            raise InputError(f"file has {info.st_size} bytes, more than the {limit} accepted", source=source, path="$")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # the file grew while being read
                raise InputError(f"file grew past the {limit} bytes accepted while being read", source=source, path="$")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source, path="$") from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of the regular file at ``path`` (see :func:`read_bytes`)."""
    return decode_text(read_bytes(path), str(path))


def decode_text(raw: bytes, source: str) -> str:
    """``raw`` as UTF-8 text that is not blank, or an :class:`InputError` naming ``source``.

    >>> decode_text(b'{"a": 1}', "x.json")
    '{"a": 1}'
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source, path="$") from None
    if not text.strip():
        raise InputError("file is empty", source=source, path="$")
    return text


def read_json(path: str | os.PathLike) -> Any:
    """Read and strictly parse the JSON file at ``path``."""
    return parse_json(read_text(path), str(path))


def check_destination(path: str | os.PathLike, *, inputs=()) -> Path:
    """Check, before any work, that ``path`` can receive an output file; return it as a Path.

    Refused: a directory that does not exist or cannot be written; an existing
    target that is not a regular file (a symbolic link, device, FIFO or
    directory); a target that is one of ``inputs`` (the files the command reads).
    """
    import stat

    target = Path(path)
    source = str(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("output directory does not exist", source=source)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError("output directory is not writable", source=source)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise InputError("is a symbolic link; refusing to replace it (write to the file it points to)", source=source)
        if not stat.S_ISREG(info.st_mode):
            raise InputError("exists and is not a regular file; refusing to replace it", source=source)
    for item in inputs:
        if item is None or str(item) == "-":
            continue
        if _same_file(target, Path(item)):
            raise InputError(f"is also an input ({item}); refusing to overwrite it", source=source)
    return target


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale(directory: Path, name: str) -> None:
    """Remove temporary files of earlier writes of ``name`` whose writer process has died."""
    prefix = f".{name}."
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(".tmp")):
            continue
        pid_text = entry.name[len(prefix):-4].split(".", 1)[0]
        if pid_text.isdigit() and not pid_alive(int(pid_text)):
            _discard(Path(entry.path))


def make_output_dir(path: str | os.PathLike) -> Path:
    """Create the output directory ``path`` (and its parents); a failure is a ``WriteRefusedError`` naming it.

    >>> import tempfile
    >>> make_output_dir(Path(tempfile.mkdtemp()) / "a" / "b").is_dir()
    True
    """
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WriteRefusedError.from_os_error("cannot create the output directory", str(path), error) from None
    return directory


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one.

    A write the system refuses (a read-only or special file system, an immutable
    file, a full disk) is a :class:`~laissez_opt.errors.WriteRefusedError` naming
    ``path`` (an ``InputError`` and the ``OSError`` that caused it); the old file stays.

    The bytes go to an unnamed file in the target's directory (Linux
    ``O_TMPFILE``: a process killed mid-write leaves nothing behind), are
    flushed to disk, get a name and replace the target with an atomic rename.
    Where ``O_TMPFILE`` is unavailable a named temporary file
    ``.<name>.<pid>.<random>.tmp`` is used, removed on any exception, and swept
    by a later write once its writer has died.  The new file gets the old
    file's permissions, or ``0666`` minus the umask; only regular files are
    replaced (see :func:`check_destination`).
    """
    try:
        _write_atomic(path, data)
    except OSError as error:
        raise WriteRefusedError.from_os_error("cannot write the file", str(path), error) from None


def _write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    import secrets

    target = check_destination(path)
    directory = target.parent if str(target.parent) else Path(".")
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    _sweep_stale(directory, target.name)
    tmp = directory / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    if hasattr(os, "O_TMPFILE") and _write_anonymous(directory, tmp, target, payload, mode):
        return
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            _fill(fd, payload, mode)
        finally:
            os.close(fd)
    except BaseException:
        _discard(tmp)
        raise
    _rename_or_discard(tmp, target)


def _discard(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _rename_or_discard(tmp: Path, target: Path) -> None:
    """Rename the finished temporary file over ``target``; remove it if that fails or is interrupted."""
    try:
        os.replace(tmp, target)
    except BaseException:
        _discard(tmp)
        raise


def _fill(fd: int, payload: bytes, mode: int | None) -> None:
    if mode is not None:
        os.fchmod(fd, mode)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


#: Per file system (device number): can an ``O_TMPFILE`` inode be given a name here?
_ANONYMOUS_WORKS: dict[int, bool] = {}


def _open_anonymous(directory: Path) -> int:
    return os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)


def _anonymous_works(directory: Path, probe: Path) -> bool:
    """Probe once per file system (an empty inode, linked and unlinked) whether unnamed files can be named."""
    try:
        device = os.stat(directory).st_dev
    except OSError:
        return False
    if device not in _ANONYMOUS_WORKS:
        works = False
        try:
            fd = _open_anonymous(directory)
            try:
                os.link(f"/proc/self/fd/{fd}", probe, follow_symlinks=True)
                os.unlink(probe)
                works = True
            finally:
                os.close(fd)
        except OSError:  # no O_TMPFILE, no /proc, or a sandbox that cannot link it
            pass
        _ANONYMOUS_WORKS[device] = works
    return _ANONYMOUS_WORKS[device]


def _write_anonymous(directory: Path, tmp: Path, target: Path, payload: bytes, mode: int | None) -> bool:
    """Fill an unnamed ``O_TMPFILE`` inode, name it and rename it over ``target``; False where unsupported."""
    if not _anonymous_works(directory, tmp):
        return False
    fd = _open_anonymous(directory)
    try:
        _fill(fd, payload, mode)
        try:
            # A new target gets the finished inode's name directly: nothing named exists half-written,
            # not even for the instant between naming a temporary file and renaming it.
            os.link(f"/proc/self/fd/{fd}", target, follow_symlinks=True)
            return True
        except FileExistsError:
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)  # replacing a file: name, then rename
    finally:
        os.close(fd)
    _rename_or_discard(tmp, target)
    return True
