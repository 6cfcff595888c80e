"""The run store of long comparisons: one JSON record per finished run, and claims on runs in flight.

A record is ``<key>.json``; its key hashes the store format, the library
version, the instance's content, the method and everything that changes the
run's outcome, so a new library version or format never reuses an old record.
The instance's content is its digest (:func:`laissez_opt.io.digest.instance_digest`,
scheme ``laissez-opt/instance-digest/1``): SHA-256 over its typed columns, the
same for the JSON and the binary form of one instance, computed without
writing its text.  Store format 3 introduced that digest (format 2 hashed
the canonical JSON text): a format-2 store is not read, its runs are
recomputed under new keys.
Records are written atomically (an unnamed ``O_TMPFILE`` file in the same
directory where Linux has it, else a named temporary file; flushed, then
renamed), so a record is either whole or absent, and hold no path of the
machine that wrote them.

Nothing read from the store is trusted: :meth:`RunStore.get` checks every
record against the fields a row must have and reports a damaged one as
:class:`DamagedRecord`; the comparison warns (:class:`RunStoreWarning`) and
recomputes it.

Only outcomes that another run would reproduce are stored (a result with a
status); failures such as a killed worker or a run over its memory or time cap
are not, so the next comparison retries them.

Claims keep concurrent comparisons on one store from computing a run twice.
Before running ``key`` a comparison creates (or opens) ``<key>.claim``, takes
an exclusive ``flock`` on it and writes its pid and host into it.  The kernel
drops the lock when the owner exits however it exits, even on ``SIGKILL``, so a
claim file whose lock can be taken is stale and is taken over.  Where the file
system has no locks, the claim falls back to the pid and host written in it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..io.jsonfile import _write_anonymous, pid_alive

__all__ = [
    "STORE_FORMAT", "RESULT_STATUSES", "RunStore", "Claim", "DamagedRecord", "RunStoreWarning",
    "run_key", "library_version",
]

#: Version of the record layout and of the key recipe (3: instances keyed by their column digest); part of every key.
STORE_FORMAT = 3
RECORD_FORMAT = "laissez-opt/run"
#: Row statuses that are outcomes of the method, and so may be stored.
RESULT_STATUSES = ("optimal", "feasible", "time_limit", "infeasible")
#: A record larger than this is not a record of ours.
MAX_RECORD_BYTES = 16 * 2**20

_INT_FIELDS = ("agents", "pools", "devices", "edges", "rounds")
_NUMBER_OR_NULL = ("objective", "bound", "solver_gap")


class RunStoreWarning(UserWarning):
    """A store file that cannot be used (it is recomputed or not cached); the message names it."""


class DamagedRecord(Exception):
    """A record file that is not a valid record; ``str()`` says what is wrong."""


def library_version() -> str:
    """The installed version of laissez-opt (``0+unknown`` when not installed)."""
    from importlib import metadata

    try:
        return metadata.version("laissez-opt")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def run_key(instance_hash: str, method: str, options: dict, *, version: str | None = None) -> str:
    """Stable key of one run: store format, library version, instance content, method, parameters."""
    text = json.dumps(
        {"store": STORE_FORMAT, "library": version or library_version(), "instance": instance_hash,
         "method": method, "options": options},
        sort_keys=True, default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_row(row, *, method: str | None = None, instance_hash: str | None = None,
                 objectives=()) -> None:
    """Raise :class:`DamagedRecord` unless ``row`` has every field a stored run needs, well typed."""
    if not isinstance(row, dict):
        raise DamagedRecord(f"row is {type(row).__name__}, not an object")
    for name in ("instance", "instance_hash", "method", "kind", "status"):
        if not isinstance(row.get(name), str):
            raise DamagedRecord(f"row field {name!r} is missing or not a string")
    for name in _INT_FIELDS:
        value = row.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DamagedRecord(f"row field {name!r} is missing or not a count")
    if not _is_number(row.get("weight_sum")):
        raise DamagedRecord("row field 'weight_sum' is missing or not a number")
    runtime = row.get("runtime_s")
    if not _is_number(runtime) or not runtime >= 0:
        raise DamagedRecord("row field 'runtime_s' is missing or not a duration")
    if row["status"] not in RESULT_STATUSES:
        raise DamagedRecord(f"row status {row['status']!r} is not a stored outcome")
    if row["kind"] not in ("exact", "heuristic"):
        raise DamagedRecord(f"row kind {row['kind']!r} is neither exact nor heuristic")
    for name in _NUMBER_OR_NULL:
        if name not in row:
            raise DamagedRecord(f"row field {name!r} is missing")
        if row[name] is not None and not _is_number(row[name]):
            raise DamagedRecord(f"row field {name!r} is not a number")
    if not isinstance(row.get("verified"), bool) and row.get("verified") is not None:
        raise DamagedRecord("row field 'verified' is not a boolean")
    for name in objectives:
        field = f"value_{name}"
        if field not in row:
            raise DamagedRecord(f"row field {field!r} is missing")
        if row[field] is not None and not _is_number(row[field]):
            raise DamagedRecord(f"row field {field!r} is not a number")
    if method is not None and row["method"] != method:
        raise DamagedRecord(f"row is a run of {row['method']!r}, not of {method!r}")
    if instance_hash is not None and row["instance_hash"] != instance_hash:
        raise DamagedRecord("row is a run of another instance")


def _parse_constant(literal: str) -> float:
    # Stored rows may hold an infinite ratio (a starved agent); NaN never comes from us.
    if literal == "Infinity":
        return math.inf
    if literal == "-Infinity":
        return -math.inf
    raise ValueError(f"{literal} is not a value a run can have")


@dataclass
class Claim:
    """A held claim on one run: the open, locked claim file."""

    key: str
    path: Path
    fd: int
    previous_owner: dict | None = None


class RunStore:
    """Finished runs under ``directory/<key>.json``; claims under ``directory/<key>.claim``.

    ``check_row``: what a stored row must be, raising :class:`DamagedRecord` otherwise
    (default: a comparison's row, :func:`validate_row`); a simulation stores its own rows.
    ``allow_nan``: rows may hold NaN (a simulation's undefined per-round ratios); a
    comparison's never do, so there NaN marks a damaged record.
    """

    def __init__(self, directory: str | os.PathLike, *, check_row=None, allow_nan: bool = False):
        self.check_row = check_row
        self.allow_nan = allow_nan
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise InputError("run store is not a directory", source=str(directory))
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the run store: {exc.strerror}", source=str(directory)) from None
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise InputError("run store is not writable", source=str(directory))
        self.host = socket.gethostname()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def claim_path(self, key: str) -> Path:
        """Where the claim file of ``key`` lives."""
        return self.directory / f"{key}.claim"

    def __contains__(self, key: str) -> bool:
        try:
            return self.get(key) is not None
        except DamagedRecord:
            return False

    # ------------------------------------------------------------------ records
    def read_record(self, key: str) -> dict | None:
        """The record of ``key`` as stored, ``None`` if absent; :class:`DamagedRecord` if unreadable."""
        path = self._path(key)
        try:
            # O_NONBLOCK: a FIFO planted under a record's name must not hang the comparison.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise DamagedRecord("is a directory, not a record") from None
        except OSError as exc:
            raise DamagedRecord(f"cannot be read: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise DamagedRecord("is not a regular file")
            if info.st_size > MAX_RECORD_BYTES:
                raise DamagedRecord(f"is {info.st_size} bytes, larger than any record")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        except OSError as exc:
            raise DamagedRecord(f"cannot be read: {exc.strerror}") from None
        finally:
            os.close(fd)
        raw = b"".join(chunks)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DamagedRecord(f"is not UTF-8 text (byte {exc.start})") from None
        if not text.strip():
            raise DamagedRecord("is empty")
        try:
            data = json.loads(text, parse_constant=float if self.allow_nan else _parse_constant)
        except json.JSONDecodeError as exc:
            raise DamagedRecord(f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
        except (ValueError, RecursionError) as exc:
            raise DamagedRecord(f"is not a record: {exc}") from None
        return data

    def get(self, key: str, *, method: str | None = None, instance_hash: str | None = None,
            objectives=()) -> dict | None:
        """The stored row of ``key``: ``None`` if absent, :class:`DamagedRecord` if it is not a valid record."""
        data = self.read_record(key)
        if data is None:
            return None
        if not isinstance(data, dict):
            raise DamagedRecord(f"holds a JSON {type(data).__name__}, not a record object")
        if data.get("format") != RECORD_FORMAT:
            raise DamagedRecord(f"has format {data.get('format')!r}, not {RECORD_FORMAT!r}")
        if data.get("store_version") != STORE_FORMAT:
            raise DamagedRecord(f"has store version {data.get('store_version')!r}, not {STORE_FORMAT}")
        if data.get("key") != key:
            raise DamagedRecord("names another key than its file name")
        if self.check_row is not None:
            self.check_row(data.get("row"))
        else:
            validate_row(data.get("row"), method=method, instance_hash=instance_hash, objectives=objectives)
        return data["row"]

    def put(self, key: str, row: dict) -> None:
        """Store ``row`` under ``key`` atomically; only rows whose status is an outcome are accepted."""
        (self.check_row or validate_row)(row)
        record = {"format": RECORD_FORMAT, "store_version": STORE_FORMAT, "library": library_version(),
                  "key": key, "row": row}
        self._write(self._path(key), json.dumps(record, sort_keys=True, allow_nan=True) + "\n")
        # A writer killed between naming its temporary file and the rename leaves it behind; writers
        # that hold no claim (a simulate sweep's parent) never meet it again: remove the dead writers'.
        self._remove_partial_writes(key, dead_writers_only=True)

    def _write(self, target: Path, text: str) -> None:
        tmp = target.with_name(f".{target.stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        # An unnamed file (Linux O_TMPFILE) first, named only just before the rename: a comparison killed
        # while it writes a record (results come back to back now that workers parse nothing) leaves nothing.
        if hasattr(os, "O_TMPFILE") and _write_anonymous(self.directory, tmp, target, text.encode("utf-8"), None):
            return
        # Mode 0o666 before the umask: records are as readable as any file the user creates.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def keys(self) -> list[str]:
        """Keys of every record file (valid or not)."""
        return sorted(p.stem for p in self.directory.glob("*.json") if not p.name.startswith("."))

    def _remove_partial_writes(self, key: str, *, dead_writers_only: bool = False) -> None:
        # Under a claim only its holder writes the key's record, so any temporary file is a dead
        # writer's. Without one, keep the files whose writer (the process id in the name) still runs.
        for path in self.directory.glob(f".{key}.*tmp"):
            if dead_writers_only:
                pid = path.name.split(".")[2] if path.name.count(".") > 3 else ""
                if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
                    continue
            try:
                path.unlink()
            except OSError:
                pass

    # ------------------------------------------------------------------- claims
    def try_claim(self, key: str) -> Claim | None:
        """Claim ``key`` for this process; ``None`` if a live process holds it.

        A claim left by a dead owner is taken over (:attr:`Claim.previous_owner`
        says whose it was).
        """
        path = self.claim_path(key)
        for _ in range(10):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
            except OSError as exc:
                raise InputError(f"cannot create a claim file: {exc.strerror}", source=str(path)) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    return self._claim_without_locks(key)
                raise
            # The previous owner unlinks the file when done; we must hold the lock on the file that is there.
            try:
                same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            previous = self._read_owner(fd)
            self._write_owner(fd)
            self._remove_partial_writes(key)
            return Claim(key, path, fd, previous)
        return None  # the file keeps changing under us: someone is busy with it

    def _read_owner(self, fd: int) -> dict | None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            data = json.loads(os.read(fd, 4096).decode("utf-8"))
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def _write_owner(self, fd: int) -> None:
        owner = json.dumps({"pid": os.getpid(), "host": self.host, "claimed": time.time()}).encode("utf-8")
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, owner)

    def _claim_without_locks(self, key: str) -> Claim | None:
        path = self.claim_path(key)
        for _ in range(3):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                try:
                    owner = json.loads(path.read_text("utf-8"))
                except (OSError, ValueError):
                    owner = None
                if not isinstance(owner, dict) or owner.get("host") != self.host or _alive(owner.get("pid")):
                    return None  # held, or owned on another host we cannot check
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
                continue
            self._write_owner(fd)
            self._remove_partial_writes(key)
            return Claim(key, path, fd, None)
        return None

    def release(self, claim: Claim, *, interrupted: bool = False) -> None:
        """Give up ``claim``: the claim file goes first, then the lock.

        ``interrupted``: the holder stops early (a signal), possibly inside a write of
        the key's record: its temporary file is removed first, since only the claim's
        holder writes the key (a signal between creating the file and the write's own
        clean-up would otherwise leave it behind).
        """
        if interrupted:
            self._remove_partial_writes(claim.key)
        try:
            claim.path.unlink()
        except FileNotFoundError:
            pass
        finally:
            try:
                os.close(claim.fd)
            except OSError:
                pass

    def claims(self) -> list[str]:
        """Keys with a claim file (held or stale)."""
        return sorted(p.stem for p in self.directory.glob("*.claim"))

    def sweep(self) -> int:
        """Remove the claims and half-written records that dead comparisons left; returns how many keys.

        A key is swept only when its claim can be taken, that is when no live
        process holds it, so a concurrent comparison is never disturbed.
        """
        keys = set(self.claims())
        keys.update(p.name[1:].split(".", 1)[0] for p in self.directory.glob(".*.tmp"))
        swept = 0
        for key in sorted(k for k in keys if len(k) == 40 and all(c in "0123456789abcdef" for c in k)):
            claim = self.try_claim(key)
            if claim is not None:
                self.release(claim)
                swept += 1
        return swept


def _alive(pid) -> bool:
    return isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and pid_alive(pid)
