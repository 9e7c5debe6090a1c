"""Specs edited the way a user or an attacker could edit the JSON file."""

import json


def tampered(spec, path, value):
    """A deep copy of ``spec`` with the entry at ``path`` (a tuple of keys/indices) set to
    ``value``, or removed when ``value`` is ``KeyError``."""
    spec = json.loads(json.dumps(spec))
    *parents, last = path
    node = spec
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return spec
