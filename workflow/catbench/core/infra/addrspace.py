"""The process's address-space limit (``ulimit -v``, RLIMIT_AS). Under a low one the failures
show far from their cause: polars warns "binary is missing" and fails later with a NameError,
pyarrow's import "failed to map segment", numpy "Unable to allocate". These name the limit."""

from __future__ import annotations

import resource
import warnings


class AddressSpaceError(OSError):
    """A library could not be loaded (an OSError: the CLI says it in one line)."""


def limit_bytes() -> int | None:
    """The soft RLIMIT_AS in bytes; None when unlimited."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def limit_note() -> str:
    """What to say after a failed allocation or library load: the limit and what to do ("" without one)."""
    limit = limit_bytes()
    if limit is None:
        return ""
    return (f"; this process may map at most {limit / 2**20:,.0f} MiB of address space (ulimit -v, "
            "RLIMIT_AS), too little for its libraries and buffers: raise it (ulimit -v unlimited) and bound "
            "memory by RAM instead (server.ram, the scheduler's mem_mb, a cgroup)")


def polars():
    """The polars module with its compiled library loaded, else an AddressSpaceError naming
    the limit: polars' own import only warns when the library cannot be mapped."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # its "binary is missing!": said below, in one line
        import polars as pl
    if not getattr(pl, "__version__", ""):    # empty when the library did not load
        raise AddressSpaceError("polars could not load its compiled library" + (
            limit_note() or ": reinstall it (pip install --force-reinstall polars)"))
    return pl
