"""What a command-line user error must look like: exit status 1 and one line, no traceback."""

from dask_kernels.cli import main


def one_line_error(capsys, argv):
    """Run ``dask-kernels argv`` in this process; its one stderr line (asserted to be one)."""
    assert main(argv) == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
