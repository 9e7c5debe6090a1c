"""The public API is typed (PEP 561: the package ships ``py.typed``)."""

import inspect
import os

import dask_kernels


def _unannotated(func, name):
    func = inspect.unwrap(func)  # scikit-learn wraps transform for set_output
    sig = inspect.signature(func)
    missing = [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")
               and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty and func.__name__ != "__init__":
        missing.append("return")
    return [f"{name}({m})" for m in missing]


def test_every_public_function_and_method_is_annotated():
    missing, checked = [], 0
    for name in dask_kernels.__all__:
        obj = getattr(dask_kernels, name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if inspect.isfunction(member) and (not attr.startswith("_") or attr == "__init__"):
                    checked += 1
                    missing += _unannotated(member, f"{name}.{attr}")
        elif inspect.isfunction(obj):
            checked += 1
            missing += _unannotated(obj, name)
    assert checked > 50 and not missing, missing


def test_the_package_says_it_is_typed():
    assert os.path.exists(os.path.join(os.path.dirname(dask_kernels.__file__), "py.typed"))
