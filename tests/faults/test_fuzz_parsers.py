"""Differential fuzz tests of every parser of bytes in the project: seeded mutations of valid
inputs, each read in a child process; every case must give the reference's result or our clear
error (tests/_fuzz.py says what each reference is and which differences are by design)."""

import json
import os
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)


def _fuzz(target, seed, n_cases, folder):
    proc = subprocess.run([sys.executable, os.path.join(TESTS, "_fuzz.py"), target, str(seed), str(n_cases),
                           str(folder)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, f"the child process died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not report["failures"], "\n".join(report["failures"])
    assert sum(report["counts"].values()) == n_cases
    return report["counts"]


SVMLIGHT_SEED, SVMLIGHT_CASES = 20261127, 150


def test_mutated_svmlight_reads_as_scikit_learn_or_is_refused(tmp_path):
    counts = _fuzz("svmlight", SVMLIGHT_SEED, SVMLIGHT_CASES, tmp_path)
    # the mutations reach both sides: files read identically and files refused by both
    assert counts.get("same as scikit-learn", 0) > SVMLIGHT_CASES // 10, counts
    assert counts.get("both refuse", 0) > SVMLIGHT_CASES // 10, counts


MODEL_SEED, MODEL_CASES = 7, 100


def test_mutated_saved_model_loads_as_saved_or_is_refused(tmp_path):
    counts = _fuzz("model", MODEL_SEED, MODEL_CASES, tmp_path)
    assert counts.get("refused", 0) > MODEL_CASES // 2, counts


CHECKPOINT_SEED, CHECKPOINT_CASES = 11, 100


def test_mutated_checkpoint_reads_as_written_or_is_refused(tmp_path):
    counts = _fuzz("checkpoint", CHECKPOINT_SEED, CHECKPOINT_CASES, tmp_path)
    assert counts.get("refused", 0) > CHECKPOINT_CASES // 2, counts


STORE_SEED, STORE_CASES = 5, 80


def test_mutated_store_metadata_opens_with_the_same_data_or_is_refused(tmp_path):
    counts = _fuzz("store", STORE_SEED, STORE_CASES, tmp_path)
    assert counts.get("refused", 0) > STORE_CASES // 2, counts
