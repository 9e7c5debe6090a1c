"""``dk-cli``: the command line reference, generated from the CLI's own argparse parser.

Each subcommand gets a section with its ``--help`` text, so the page lists exactly the commands
and flags the installed ``dask-kernels`` has (a new subcommand module appears by itself).
"""

import argparse
import os
from unittest import mock

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

WIDTH = "86"  # argparse wraps help to $COLUMNS: fixed (the page's width), not the terminal's


def _help(parser):
    with mock.patch.dict(os.environ, {"COLUMNS": WIDTH}):
        return parser.format_help()


def _subparsers(parser):
    for action in parser._actions:  # argparse keeps the subcommands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


class CliDirective(SphinxDirective):
    has_content = False

    def run(self):
        from dask_kernels.cli import build_parser

        parser = build_parser()
        lines = ["", ".. code-block:: text", ""] + ["    " + ln for ln in _help(parser).splitlines()] + [""]
        for name, sub in sorted(_subparsers(parser).items()):
            title = f"dask-kernels {name}"
            lines += [title, "-" * len(title), "", sub.description or "", "", ".. code-block:: text", ""]
            lines += ["    " + ln for ln in _help(sub).splitlines()] + [""]
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="dask_kernels.cli"), container)
        return container.children


def setup(app):
    app.add_directive("dk-cli", CliDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
