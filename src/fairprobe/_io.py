"""Tables in, files out: the one place every command reads CSV or Parquet files and the one
writer of every output file (results, reports, CSV tables, caches, node state)."""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from fairprobe.errors import DataError, FairprobeError

__all__ = ["check_output", "prepare_private_file", "read_table", "write_file"]

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".tsv")
_PARQUET_SUFFIXES = (".parquet", ".pq")


#: The path that means standard input (tables read) or standard output (results written).
STDIO = "-"

#: Bytes of table text a table read into memory may hold (environment variable
#: ``FAIRPROBE_MAX_TABLE_BYTES``): a CSV's text after decompression; for Parquet, its uncompressed
#: data, at least 8 bytes a cell. pandas needs several times the text in memory, so 2 GiB of
#: text stays well inside a 24 GiB machine; a compressed file is counted as it decompresses and is
#: parsed, so a small ``.csv.gz`` that expands without bound is stopped at the cap. Prediction logs
#: do not go through here: they are counted out of core (``fairprobe.scale``).
MAX_TABLE_BYTES = 2 * 1024**3
MAX_TABLE_BYTES_ENV = "FAIRPROBE_MAX_TABLE_BYTES"


def max_table_bytes() -> int:
    """The cap on a table's text: ``$FAIRPROBE_MAX_TABLE_BYTES``, else :data:`MAX_TABLE_BYTES`."""
    from fairprobe._validation import env_int

    return env_int(MAX_TABLE_BYTES_ENV, MAX_TABLE_BYTES, lo=1, what="a positive number of bytes")


def _too_large(what: str, name: str, cap: int) -> DataError:
    return DataError(
        f"{what} {name} holds more than {cap:,} bytes of table text (environment variable "
        f"{MAX_TABLE_BYTES_ENV}): tables read into memory are capped. Raise it if that is "
        "intended; prediction logs of any size are counted out of core by "
        "'fairprobe audit --predictions'.")


def _check_size(p: Path, name: str, what: str) -> None:
    """Refuse a plain or Parquet table whose text exceeds :func:`max_table_bytes`, before
    parsing it: a plain file by its size, a Parquet file by its footer (the larger of its
    uncompressed size and 8 bytes a cell). A compressed file is counted as it is parsed
    (:class:`_Capped`), so it is decompressed once."""
    cap = max_table_bytes()
    if name.endswith(_PARQUET_SUFFIXES):
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(p).metadata
        # dictionary and run-length encodings make the declared sizes far smaller than the
        # frame pandas builds, which holds at least 8 bytes per cell
        size = max(sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)),
                   8 * meta.num_rows * meta.num_columns)
        if size > cap:
            raise _too_large(what, p.name, cap)
    elif _decompressor(name) is None and p.stat().st_size > cap:
        raise _too_large(what, p.name, cap)


class _Capped(io.RawIOBase):
    """A decompressed stream that raises once more than ``cap`` bytes have come out of it:
    the parser stops there, with at most one block beyond the cap in memory."""

    def __init__(self, fh: Any, cap: int, error: DataError) -> None:
        self._fh, self._cap, self._error, self._total = fh, cap, error, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = int(self._fh.readinto(b) or 0)
        self._total += n
        if self._total > self._cap:
            raise self._error
        return n


def _read_csv(p: Path, name: str, sep: str, what: str,
              dtype: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``pd.read_csv`` of a plain file, or of a compressed one through :class:`_Capped`."""
    opener = _decompressor(name)  # (pandas ignores dtype entries of columns a file lacks)
    if opener is None:
        return pd.read_csv(p, sep=sep, dtype=dtype)
    cap = max_table_bytes()
    with opener(p) as fh:
        return pd.read_csv(io.BufferedReader(_Capped(fh, cap, _too_large(what, p.name, cap))),
                           sep=sep, dtype=dtype)


def _decompressor(name: str) -> Any:
    if name.endswith(".gz"):
        import gzip

        return gzip.open
    if name.endswith(".bz2"):
        import bz2

        return bz2.open
    if name.endswith(".xz"):
        import lzma

        return lzma.open
    if name.endswith(".zst"):
        from fairprobe._extras import import_optional

        zstd = import_optional("zstandard", feature="reading .zst tables")

        def open_zst(path: Path) -> Any:
            return zstd.open(path, "rb")

        return open_zst
    return None


def read_stdin_csv(what: str = "Standard input") -> tuple[pd.DataFrame, bytes]:
    """A CSV table from standard input (``-``), with the bytes read (for their hash)."""
    import sys

    cap = max_table_bytes()
    raw = sys.stdin.buffer.read(cap + 1)
    if len(raw) > cap:
        raise _too_large(what, "(piped)", cap)
    if not raw.strip():
        raise DataError(f"{what} is empty: pipe a CSV table into it.")
    try:
        return pd.read_csv(io.BytesIO(raw)), raw
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{what} is not a readable CSV table: {str(exc).splitlines()[0]}") \
            from None


def stat_regular(path: str | os.PathLike[str], messages: Mapping[str, str]) -> os.stat_result:
    """``os.stat(path)`` of a regular file, else a :class:`DataError` of ``messages[problem]``:
    ``problem`` is ``"missing"``, ``"unreadable"``, ``"directory"`` or ``"special"``, and
    ``{detail}`` in a message stands for the system's reason (unreadable) or what the file is
    (special, e.g. ``"a FIFO (named pipe)"``). A FIFO would block a reader and a device such as
    /dev/zero is endless, so only regular files are read; each caller says in its own words what
    it expected."""

    def refused(problem: str, detail: str = "") -> DataError:
        # replace, not str.format: the caller's message holds a file name, braces and all
        return DataError(messages[problem].replace("{detail}", detail))

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise refused("missing") from None
    except OSError as exc:
        raise refused("unreadable", str(exc.strerror or exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise refused("directory", "a directory")
    if not stat.S_ISREG(st.st_mode):
        raise refused("special", _kind(st.st_mode))
    return st


def _check_input(p: Path, what: str) -> None:
    """A table is read from a regular file only (:func:`stat_regular`), refused in one line
    that says what it is otherwise."""
    name = repr(str(p))
    stat_regular(p, {
        "missing": f"{what} {name} does not exist.",
        "unreadable": f"cannot read {what.lower()} {name}: {{detail}}.",
        "directory": f"{what} {name} is a directory; give the table file itself.",
        "special": f"{what} {name} is {{detail}}, not a regular file; save the table to a file "
                   "(or pipe a CSV into '-').",
    })


def _check_header(p: Path, sep: str, what: str) -> None:
    """Refuse a CSV header that names a column twice: pandas would rename the second ``a.1``
    and a flag naming ``a`` would silently read the first."""
    head = pd.read_csv(p, sep=sep, header=None, nrows=1, dtype=str).iloc[0]
    names = [str(v) for v in head if isinstance(v, str)]
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DataError(f"{what} {p.name} names the column {n!r} twice; rename one "
                            "(columns are read by name).")
        seen.add(n)


def read_table(path: str | os.PathLike[str], what: str = "Table file",
               dtype: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Read a CSV (optionally compressed; ``.tsv`` tab-separated) or Parquet file.

    ``dtype`` (CSV only) maps columns to the types pandas reads them as (the counting engines
    read group columns as text).

    Raises :class:`~fairprobe.errors.DataError` in one line when the file does not exist, has
    another suffix, is empty or cannot be parsed; ``what`` names the file in the message.
    """
    p = Path(path)
    _check_input(p, what)
    name = p.name.lower()
    try:
        if name.endswith(_PARQUET_SUFFIXES):
            from fairprobe._extras import import_optional

            import_optional("pyarrow", feature=f"reading {p.name}")
            _check_size(p, name, what)
            return pd.read_parquet(p)
        if name.endswith(_CSV_SUFFIXES):
            sep = "\t" if name.endswith(".tsv") else ","
            _check_size(p, name, what)
            df = _read_csv(p, name, sep, what, dtype)
            _check_header(p, sep, what)
            return df
    except FairprobeError:
        raise
    except pd.errors.EmptyDataError:
        raise DataError(f"{what} {p.name} is empty.") from None
    except Exception as exc:  # noqa: BLE001 - any parser failure becomes one line
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"Cannot read {what.lower()} {p.name}: {first}") from None
    raise DataError(f"{what} {p.name} must end in .csv, .tsv or .parquet.")


# -- writing: the one writer of every output file -----------------------------------------------
#
# Policy (docs/threat-model.md, "Output files"): an output path must be missing or a regular
# file. Anything else (a directory, a device such as /dev/full, a FIFO, a socket) is refused in
# one line, and so is a symbolic link *as the last component* of the path, whatever it points to:
# replacing a link atomically would swap the link out and leave its target untouched, and
# writing through it would let whoever placed the link choose which file is overwritten.
# Symbolic links among the parent directories are followed (they are the user's own layout).
# Files that hold answers or keys (``private=True``: answer caches, node state, key files) are
# created 0600 whatever the umask; other outputs (results, reports) follow the umask.


def _lstat(p: Path) -> os.stat_result | None:
    try:
        return os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):  # a file as parent: check_output says so
        return None
    except OSError as exc:
        raise DataError(f"cannot inspect {p}: {exc.strerror or exc}.") from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output(path: str | os.PathLike[str], what: str = "output",
                 error: type[FairprobeError] = DataError) -> Path:
    """Refuse, in one line, an output path that is anything but a regular file or missing.

    Also refuses a parent that is a file or a directory that cannot be written. ``what`` names
    the flag or setting in the message (``--json``, ``--cache``, ...). Returns the path.
    """
    p = Path(path)
    if str(path) == STDIO:  # standard output (the CLI's "-")
        return p
    st = _lstat(p)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise error(f"{what} {str(p)!r} is a directory; give a file path.")
    if st is not None and not stat.S_ISREG(st.st_mode):
        hint = ("give the path of the file itself (symbolic links are not followed for "
                "outputs)" if stat.S_ISLNK(st.st_mode) else "give a regular file path")
        raise error(f"{what} {str(p)!r} is {_kind(st.st_mode)}; fairprobe writes only regular "
                    f"files; {hint}.")
    parent = p.parent.absolute()
    for d in (parent, *parent.parents):
        if d.exists():
            if not d.is_dir():
                raise error(f"{what} {str(p)!r}: {str(d)!r} is a file, not a directory.")
            if not os.access(d, os.W_OK | os.X_OK):
                raise error(f"{what} {str(p)!r}: the directory {str(d)!r} is not writable; "
                            "choose another path.")
            break
    if st is not None and not os.access(p, os.W_OK):
        raise error(f"{what} {str(p)!r} is not writable; choose another path.")
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(path: str | os.PathLike[str], data: str | bytes, *, what: str = "output",
               private: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same directory, then rename).

    Parameters
    ----------
    path : str or PathLike
        Must be missing or a regular file (:func:`check_output`); its directory is created.
    data : str or bytes
        Text is written as UTF-8.
    what : str
        The flag or setting that names the path, for error messages (``--json``, ``--csv``).
    private : bool
        Create the file 0600 (answers, keys); otherwise ``0666 & ~umask``.

    Raises
    ------
    DataError
        The path is a directory, device, FIFO, socket or symbolic link, or cannot be written.
    """
    target = check_output(path, what)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if str(path) == STDIO:  # "-": standard output, as the command-line convention has it
        import sys

        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise DataError(f"cannot write {what} {target}: {exc.strerror or exc}; choose another "
                        "path.") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())
        check_output(target, what)  # narrow the window between the check and the rename
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataError(f"cannot write {what} {target}: {exc.strerror or exc}; choose another "
                        "path.") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def prepare_private_file(path: str | os.PathLike[str], what: str,
                         error: type[FairprobeError] = DataError) -> Path:
    """Make sure ``path`` is a regular file that a database may open: create it 0600 if missing.

    For SQLite files (answer caches, node state), which SQLite opens itself: the same refusal
    as :func:`check_output`, and a missing file is created empty with mode 0600 (no symlink
    followed, ``O_EXCL``), so the answers or counts it will hold are never readable by others.
    SQLite creates its ``-wal`` and ``-shm`` files with the mode of the database file.
    """
    p = check_output(path, what, error)
    if _lstat(p) is None:
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0),
                         0o600)
        except FileExistsError:  # created meanwhile by another process: the checks below
            return prepare_private_file(p, what, error)
        except OSError as exc:
            raise error(f"cannot create {what} {str(p)!r}: {exc.strerror or exc}; choose "
                        "another path.") from None
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        return p
    # a database (or a journal SQLite would replay into it) that another account created is
    # refused, not trusted: whoever planted it chose the answers it holds, and could read ours
    uid = os.geteuid()
    for q in (p, *(Path(str(p) + side) for side in ("-wal", "-shm", "-journal"))):
        st = _lstat(q)
        if st is not None and st.st_uid != uid:
            raise error(f"{what} {str(q)!r} belongs to another account (uid {st.st_uid}), so its "
                        "contents cannot be trusted; remove it or choose another path.")
    # an existing database (and the journal files SQLite keeps beside it) is narrowed to 0600:
    # what it holds (answers, a node's counts) reveals a private query set
    for q in (p, *(Path(str(p) + side) for side in ("-wal", "-shm", "-journal"))):
        try:
            if q.is_file() and not q.is_symlink() and q.stat().st_mode & 0o077:
                q.chmod(0o600)
        except OSError:
            pass  # not ours to change (another owner): SQLite's own open decides
    return p
