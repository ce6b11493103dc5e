"""Numbers in a contract mean what their authors wrote (YAML 1.1 implicit types), in every
field: :func:`_check_number_nodes`, run on the composed nodes by both YAML paths of
:func:`worker.core.contracts.yaml_doc.load_document`."""

from __future__ import annotations

import re
from typing import Any

import yaml

from worker.core.contracts.fixes import _fail

_INT_TAG = "tag:yaml.org,2002:int"
_YAML11_READS = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a float",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a timestamp",
}


def _yaml11_value(node: yaml.ScalarNode) -> Any:
    """What YAML 1.1 (PyYAML's SafeLoader) makes of a scalar node, for messages."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node)
    except (yaml.YAMLError, ValueError):
        return node.value
    finally:
        loader.dispose()


_FLOAT_TAG = "tag:yaml.org,2002:float"
#: A float YAML 1.1 and 1.2 read alike: no ``_`` (1.1 drops it) and no ``:`` (base 60).
_PLAIN_FLOAT = re.compile(
    r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


def _check_number_nodes(root: Any, source: str) -> None:
    """Numbers mean what their authors wrote, in every field (YAML 1.1 implicit types).

    An unquoted scalar YAML 1.1 reads as an integer must be written in plain decimal
    (``10``, ``-3``, ``+5``): ``010`` (octal 8), ``0x1A`` (26), ``1:30`` (base 60: 90) and
    ``1_000`` are refused, YAML 1.2 and every other reader taking them otherwise; a float
    must have no ``_`` or ``:`` (``0.9_9``). Mapping keys are not numbers here (domain codes
    are :func:`_check_domain_nodes`'). ``.inf``/``.nan`` pass, refused later as not finite.
    """
    todo: list[tuple[Any, list[Any]]] = [(root, [])]
    while todo:
        node, where = todo.pop()
        if isinstance(node, yaml.MappingNode):
            todo.extend((v, [*where, k.value if isinstance(k, yaml.ScalarNode) else "?"])
                        for k, v in node.value)  # fmt: skip
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((v, [*where, i]) for i, v in enumerate(node.value))
        elif isinstance(node, yaml.ScalarNode) and (
            (node.tag == _INT_TAG and not _PLAIN_INT.fullmatch(node.value))
            or (node.tag == _FLOAT_TAG and not _PLAIN_FLOAT.fullmatch(node.value))
        ):
            raise _fail(
                source,
                where,
                f"{node.value} is written unquoted and YAML 1.1 reads it as "
                f"{_YAML11_READS[node.tag]}: {_yaml11_value(node)!r}, not as written",
                "write the number in plain decimal (10, 0.5, 1.0e+9), or quote it if it is "
                "text: YAML 1.1 reads unquoted 010 as octal 8, 0x1A as 26, 1:30 as base-60 "
                "90 and 1_000 as 1000, YAML 1.2 and other readers otherwise",
            )
