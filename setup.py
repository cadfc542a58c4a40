"""The optional C accelerator of the produce path; everything else is in pyproject.toml.

`optional=True`: without a compiler (or Python headers) the install still succeeds and
minibroker runs its pure-Python code, which is the reference anyway."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(f"minibroker.{layer}._accel", [f"minibroker/{layer}/_accel.c"], optional=True)
        for layer in ("records", "protocol")
    ]
)
