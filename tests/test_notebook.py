"""examples/: the notebook runs headless on a LocalCluster Client (progress displayed, plots,
lazy predictions) and the example script removes its temporary folder."""

import glob
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "train_on_a_cluster.ipynb")


def test_notebook_executes_with_progress_plots_and_lazy_predictions(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("DK_EXAMPLE_ROWS", "4000")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    featurize_cell = next(c for c in code if "dask_kernels.featurize(" in c.source)
    shown = [o for o in featurize_cell.outputs if o.output_type == "display_data"]
    # distributed's progress widget is displayed (it used to be created and dropped)
    assert any("application/vnd.jupyter.widget-view+json" in o.data for o in shown), featurize_cell.outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the history plot
    lazy_cell = next(c for c in code if c.source.rstrip().endswith("\nlazy"))
    assert "dask.array" in str(lazy_cell.outputs[0].data)  # returned lazily
    text = "".join(o.get("text", "") for o in outputs)
    acc = float(text.split("new rows: ")[1].split()[0])
    assert acc > 0.6  # 3 classes, the largest about half of the rows; GCWS + SGD beats it
    assert not glob.glob(os.path.join(str(tmp_path), "dk_notebook_*"))  # the last cell cleaned up


def test_example_script_cleans_up_its_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples"))
    sys.modules.pop("train_from_store", None)
    import train_from_store

    plots = tmp_path / "plots"
    plots.mkdir()
    acc = train_from_store.main(n_rows=3000, epochs=2, plot_dir=str(plots))
    assert 0.5 < acc <= 1.0
    assert (plots / "train_from_store.png").stat().st_size > 0
    assert not glob.glob(os.path.join(str(tmp_path), "dk_example_*"))


def test_progress_helper_displays_the_widget_in_jupyter(monkeypatch):
    """Unit check of the helper the notebook test exercises: in a kernel, the object
    distributed.progress returns is passed to IPython's display."""
    import types

    from dask_kernels import _progress

    import distributed
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=object()))
    monkeypatch.setattr(IPython.display, "display", shown.append)

    monkeypatch.setattr(distributed, "progress", lambda futures, notebook: ("widget", notebook, len(futures)))
    assert _progress.in_jupyter()
    _progress.wait_futures([1, 2, 3])
    assert shown == [("widget", True, 3)]
