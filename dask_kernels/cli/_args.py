"""Argument checks shared by the subcommands: everything is validated before a cluster starts.

User errors raise :class:`UsageError` (or the library's ``ValueError``/``OSError``), which
:func:`dask_kernels.cli.main` prints as one line naming the flag, without a traceback.
"""

import argparse
import errno
import json
import math
import os
import re
import socket

#: Schemes distributed can connect to; ``host:port`` without one means tcp.
SCHEMES = ("tcp", "tls", "ucx", "ws", "wss", "inproc")
_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)"
                      r":(?P<port>\d{1,5})/?$")
#: Seconds a refused or silent scheduler address may cost before the CLI gives up.
CONNECT_TIMEOUT = 5.0


class UsageError(Exception):
    """A mistake in the command line (printed as one line, no traceback)."""


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonnegative_float(text):
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def positive_float(text):
    """argparse type: a finite number > 0."""
    value = nonnegative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0, got 0")
    return value


def byte_size(text):
    """argparse type: a size in bytes, ``256MiB``, ``1GiB``, ``512MB``; a plain number is MiB."""
    from dask.utils import parse_bytes

    t = text.strip()
    try:
        value = float(t) * 2**20 if re.fullmatch(r"[0-9.]+", t) else parse_bytes(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 256MiB or 1GiB (a plain number is MiB), "
                                         f"got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive size, got {text!r}")
    return int(value)


def fraction(text):
    """argparse type: a number in [0, 1) (0 turns the held-out set off)."""
    value = nonnegative_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def scheduler_address(text):
    """argparse type: ``tcp://host:port``, ``host:port`` or another distributed scheme."""
    m = _ADDRESS.match(text.strip())
    if not text.strip() or m is None:
        raise argparse.ArgumentTypeError(
            f"expected a scheduler address like tcp://10.0.0.1:8786 or host:8786, got {text!r}")
    scheme = m.group("scheme") or "tcp"
    if scheme not in SCHEMES:
        raise argparse.ArgumentTypeError(f"unknown scheme {scheme!r} in {text!r}; known: {', '.join(SCHEMES)}")
    if not 0 < int(m.group("port")) < 65536:
        raise argparse.ArgumentTypeError(f"port {m.group('port')} of {text!r} is not in 1..65535")
    return f"{scheme}://{m.group('host')}:{m.group('port')}"


def connect(address, flag="--scheduler"):
    """A ``distributed.Client`` on ``address``; fails within seconds, naming ``flag``.

    A plain TCP connection is tried first, so a refused port or an unknown host is reported
    at once instead of after distributed's retries.
    """
    from distributed import Client

    scheme, _, rest = address.partition("://")
    if scheme in ("tcp", "tls", "ws", "wss"):
        host, _, port = rest.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
        except OSError as e:
            raise UsageError(f"{flag} {address}: cannot connect ({e.strerror or e}); is a `dask scheduler` "
                             "running there?") from None
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT}s")
    except OSError as e:  # TimeoutError included
        raise UsageError(f"{flag} {address}: no Dask scheduler answered ({e})") from None


def param_value(text, flag="--param"):
    """A ``--param`` value: JSON if it parses (numbers, true, lists), else the text itself."""
    try:
        return json.loads(text)
    except RecursionError:
        raise UsageError(f"{flag}: the value is nested too deeply ({len(text):,} characters)") from None
    except ValueError:  # JSONDecodeError: a plain word such as mean
        return text


def parse_params(items, flag="--param"):
    """``{name: value}`` from ``NAME=VALUE`` items: the one parser of every subcommand's
    ``--param`` (and of job files' ``params`` tables, which become ``--param`` items)."""
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{flag} expects NAME=VALUE, got {item[:80]!r}")
        params[name.strip()] = param_value(value, f"{flag} {name.strip()}")
    return params


def _refuse_bools_as_numbers(cls, params, flag):
    """Refuse true/false for a parameter that takes no boolean: the constraints follow scikit-learn's,
    whose Interval counts True as the integer 1 (``n_components=true`` made a width-1 store)."""
    from .._params import declared_constraints

    constraints = declared_constraints(cls)
    for name, value in params.items():
        takes = constraints.get(name, "no_validation")
        if isinstance(value, bool) and takes != "no_validation" and not any(c in ("boolean", bool) for c in takes):
            raise UsageError(f"{flag} {name}={str(value).lower()}: {cls.__name__}'s {name} takes no true/false "
                             "(a number or a name: see the map's parameters)")


def make_map(method, params, flag="--param", others=()):
    """An (unfitted) feature map of ``method`` with ``params``, parameters validated now;
    ``others``: the command's methods that are no map (``train``'s raw), listed when unknown."""
    from ..maps.spec import map_class, registered_maps

    cls = map_class(method)
    if cls is None:
        known = sorted({*registered_maps(), *others})
        raise UsageError(f"--method {method!r} is unknown; known: {', '.join(known)}")
    known = sorted(cls().get_params())
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise UsageError(f"{flag} {unknown[0]}: {method} has no such parameter; known: {', '.join(known)}")
    _refuse_bools_as_numbers(cls, params, flag)
    fmap = cls(**params)
    try:
        fmap._validate_params()
        fmap._validate_params_extra()
    except (ValueError, TypeError) as e:
        raise UsageError(f"{flag}: {e}") from None
    return fmap


def check_width(fmap, n_features, flag):
    """Refuse now, naming ``flag``, a map whose bounds (:mod:`dask_kernels.maps._bounds`) input of
    ``n_features`` columns would exceed: before a cluster starts or anything is written."""
    try:
        fmap._check_width(int(n_features))
    except ValueError as e:
        raise UsageError(f"{flag} {n_features}: {e}") from None


#: Library wording -> this command line's flags.
_FLAGS = (("overwrite=True", "--overwrite"), ("resume=False", "--no-resume"))


#: Errors that are the user's to fix: printed as one line (no traceback) with exit status 1.
USER_ERRORS = (UsageError, ValueError, OSError, KeyError)


def debug_on(args):
    """Whether a traceback is wanted (``--debug``, or ``DASK_KERNELS_DEBUG`` set)."""
    return args.debug or os.environ.get("DASK_KERNELS_DEBUG", "") not in ("", "0")


def input_where(args, exc):
    """``input PATH: `` before a bad value of the input rows: the library names the row and
    column, only the command knows the file (``input``; ``source`` for ``train``)."""
    from ..blocks import InputValueError  # noqa: PLC0415  (an error path: numpy is loaded by now)

    path = getattr(args, "input", None) or getattr(args, "source", None)
    return f"input {path}: " if isinstance(exc, InputValueError) and path else ""


#: errno of a write that found no room: a full disk, a quota, a file size limit (``ulimit -f``)
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def output_where(args, exc):
    """``writing OUTPUT: `` before an error of a write that found no room: a store's chunk or a
    model's file written by a library names no file, only the command knows what it was writing."""
    if not isinstance(exc, OSError) or exc.errno not in NO_ROOM or exc.filename is not None:
        return ""
    paths = [p for p in (getattr(args, "output", None), getattr(args, "checkpoint", None)) if p]
    return f"writing {' or '.join(paths)}: " if paths else ""


def user_message(exc):
    """One line for a user error, with API argument names replaced by the CLI's flags."""
    if isinstance(exc, KeyError):
        text = f"missing key {exc.args[0]!r}" if exc.args else "missing key"
    elif isinstance(exc, OSError) and exc.filename is not None and str(exc.filename) not in str(exc):
        text = f"{exc.filename}: {exc.strerror or exc}"
    else:
        text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.errno in NO_ROOM:
        text += " (no room left for the output: free space or raise the limit, then run the command again)"
    for api, flag in _FLAGS:
        text = text.replace(api, flag)
    return " ".join(text.split())
