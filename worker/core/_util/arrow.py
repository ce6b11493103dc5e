"""pyarrow without its pandas probe: a process that never imports pandas does not pay for it.

pyarrow asks whether pandas is installed the first time a Python object (a list, a column
read as ``to_numpy``, an empty table of a schema) could be a pandas Series or DataFrame,
and imports pandas to find out: 0.5 to 1 s of ``contract-gate check``'s start-up on a
machine where pandas is installed (it is no dependency of the gate; geopandas brings it)
although the gate never makes a pandas object. :func:`skip_pandas_probe` answers that probe
with "no pandas" while pandas is not imported yet, which is then true: no object of the
process can be a pandas one. pyarrow's own pandas conversions (``to_pandas``,
``Table.from_pandas``) still import pandas when called (they do not take the probe's answer).
"""

from __future__ import annotations

import importlib.abc
import sys

import pyarrow as pa

__all__ = ["skip_pandas_probe"]


def skip_pandas_probe() -> None:
    """Settle pyarrow's soft pandas probe as "not installed", unless pandas is already
    imported (then nothing changes). Call it at a process's start (the CLI's entry point),
    before threads that may import pandas; idempotent, microseconds."""
    if "pandas" in sys.modules:
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)  # `import pandas` raises ImportError meanwhile
    try:
        pa.array([0])  # a list: pyarrow probes for pandas (array.pxi, _is_array_like)
    finally:
        sys.meta_path.remove(blocker)


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that refuses pandas (a ``None`` entry in ``sys.modules`` does not
    do: pyarrow's compiled import takes it for the module)."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"pandas is not imported here ({__name__})", name=fullname)
        return None
