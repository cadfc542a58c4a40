"""The optional C accelerators (the produce path, the frame decoder); everything else is in
pyproject.toml.

`optional=True`: without a compiler (or Python headers) the install still succeeds and
minibroker runs its pure-Python code, which is the reference anyway."""

import warnings

from setuptools import Extension, setup
from setuptools.warnings import InformationOnly

# `pip install -e .` otherwise prints setuptools' note that a `minibroker` folder in the
# working directory may shadow the install: for an editable install of this checkout that
# folder is the install. The note is informational only (not a deprecation).
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

setup(
    ext_modules=[
        Extension(
            f"minibroker.{layer}._accel",
            [f"minibroker/{layer}/_accel.c"],
            depends=["minibroker/records/_scan.h"],
            optional=True,
        )
        for layer in ("records", "protocol", "server")
    ]
)
