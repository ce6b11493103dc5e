"""The libyaml path of :func:`worker.core.contracts.yaml_doc.load_document`: a loader whose
scalar tags are resolved through a cache, the construction of strings, lists and mappings,
and the nesting depth of a composed tree (issue 27: a 1,000-version bootstrap parses 1,000
contracts, and PyYAML's Python resolver and generic constructor were half of a parse)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

__all__ = ["unique_mapping"]

_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)
_STR_TAG = "tag:yaml.org,2002:str"
#: (node kind, scalar text, implicit flags) -> resolved tag, for short scalars: the same
#: keys and values recur in every contract, and PyYAML's resolver is Python regexes.
_RESOLVED: dict[tuple[Any, Any, Any], str] = {}
_RESOLVED_MAX, _RESOLVED_TEXT_MAX = 4096, 64


def _cached_resolve(loader: Any, kind: Any, value: Any, implicit: Any) -> str:
    """``loader.resolve`` (PyYAML's implicit resolvers) remembered for short scalars; a
    loader with path resolvers is not cached (its answer depends on the path)."""
    if loader.yaml_path_resolvers or (value is not None and len(value) > _RESOLVED_TEXT_MAX):
        return str(_CSafeLoader.resolve(loader, kind, value, implicit))
    key = (kind, value, implicit)
    tag = _RESOLVED.get(key)
    if tag is None:
        tag = _CSafeLoader.resolve(loader, kind, value, implicit)
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[key] = tag
    return str(tag)


_FastLoader: Any = (
    None
    if _CSafeLoader is None
    else type("_FastLoader", (_CSafeLoader,), {"resolve": _cached_resolve})
)


_SEQ_TAG, _MAP_TAG = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


def _construct(loader: Any, node: yaml.Node) -> Any:
    """``loader.construct_document(node)`` for a tree without anchors (so no node is
    shared) and at most ``yaml_doc.MAX_DEPTH`` deep: strings, lists and mappings
    (duplicate and unhashable keys refused as ``yaml_doc._construct_mapping`` does) are
    built here, any other tag by the loader's own constructor. PyYAML's generic
    construction, one generator per collection, was a fifth of a contract's parse."""
    tag = node.tag
    if tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value
    if tag == _SEQ_TAG and isinstance(node, yaml.SequenceNode):
        return [_construct(loader, child) for child in node.value]
    if tag != _MAP_TAG or not isinstance(node, yaml.MappingNode):
        return loader.construct_document(node)
    return unique_mapping(node, lambda child: _construct(loader, child))


def unique_mapping(node: yaml.MappingNode, construct: Callable[[yaml.Node], Any]) -> dict[Any, Any]:
    """The dict of a mapping node, each key and value built by ``construct``.

    Raises
    ------
    yaml.constructor.ConstructorError
        A key that is unhashable (a list or mapping) or repeated: YAML 1.2 section 3.2.1.1
        requires unique keys, and PyYAML keeps the last silently.
    """
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = construct(key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a mapping key is a {type(key).__name__}", key_node.start_mark
            ) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = construct(value_node)
    return mapping


def _node_depth(root: yaml.Node) -> int:
    """Deepest nesting of collection nodes under ``root`` (a scalar root is depth 1),
    counted level by level."""
    depth, level = 0, [root]
    while level:
        depth += 1
        below: list[yaml.Node] = []
        for node in level:
            if isinstance(node, yaml.SequenceNode):
                below += node.value
            elif isinstance(node, yaml.MappingNode):
                for pair in node.value:
                    below += pair
        level = below
    return depth
