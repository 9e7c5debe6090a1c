"""Sphinx configuration: numpydoc API reference, MyST pages, executed examples (myst-nb).

Built by ``make docs`` with warnings as errors (``-W --keep-going``); CI runs it after the tests.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))

import dask_kernels  # noqa: E402  (installed into .venv by `make docs`)

project = "dask_kernels"
author = "the dask_kernels contributors"
copyright = "2026, the dask_kernels contributors"
release = dask_kernels.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "dk_cli",
    "dk_mathml",  # formulas as MathML at build time: rendered offline, no JavaScript
]
html_math_renderer = "mathml"

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# --- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types; the signature stays short
numpydoc_show_class_members = False  # each class page lists its own methods (autodoc members)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- MyST and executed examples ---------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "force"  # every build runs the examples: their outputs are today's
nb_execution_timeout = 300
nb_execution_raise_on_error = True  # a failing example fails the build
nb_execution_show_tb = True
nb_merge_streams = True
# The examples run small on the build machine (the notebook reads DK_EXAMPLE_ROWS).
os.environ.setdefault("DK_EXAMPLE_ROWS", "2000")
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".numba_cache"))

# The gallery: every notebook in examples/ is copied here and executed (the folder is generated).
_gallery = os.path.join(HERE, "examples", "generated")
shutil.rmtree(_gallery, ignore_errors=True)
os.makedirs(_gallery)
for _name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
    if _name.endswith(".ipynb"):
        shutil.copy(os.path.join(ROOT, "examples", _name), _gallery)



def _check_api_reference(app):
    """Every public name (``dask_kernels.__all__``) is in the API reference and every registered
    map has a method page: warnings, so the -W build fails when either is left out."""
    from sphinx.util import logging

    with open(os.path.join(HERE, "api.rst")) as f:
        text = f.read()
    documented = {line.strip() for line in text.splitlines()} | {
        line.split("::", 1)[1].strip() for line in text.splitlines() if line.startswith(".. data::")}
    for name in sorted(set(dask_kernels.__all__) - documented):
        logging.getLogger(__name__).warning(f"dask_kernels.{name} is public (__all__) but not in docs/api.rst")
    for method in sorted(dask_kernels.registered_maps()):  # every map has its page of formulas
        if not os.path.exists(os.path.join(HERE, "methods", f"{method}.md")):
            logging.getLogger(__name__).warning(f"feature map {method!r} has no page docs/methods/{method}.md")


def setup(app):
    app.connect("builder-inited", _check_api_reference)
    app.connect("autodoc-skip-member", _skip_metadata_requests)


# --- HTML -------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"dask_kernels {release}"
html_static_path = ["_static"]
html_css_files = ["dk.css"]


def _skip_metadata_requests(app, what, name, obj, skip, options):
    # scikit-learn generates set_{fit,partial_fit,score}_request on estimators whose methods take
    # sample_weight; their docstrings point into scikit-learn's own glossary
    return True if name.startswith("set_") and name.endswith("_request") else None
