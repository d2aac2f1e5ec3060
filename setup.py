"""The compiled part of the kit: one C file, the log4j block scan (kitlib/formats/logs/_scan.c).

It is optional: where no C compiler is found the install goes on without it, and the log4j parser
uses its numpy path for every block (same tables, slower).

The packages are listed here too: the notebooks' home is the repository's top-level notebooks/
folder, and a wheel carries them as the package kitlib.notebooks (package data only). Everything
else is in pyproject.toml.
"""

from setuptools import Extension, find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["kitlib*"]), "kitlib.notebooks"],
    package_dir={"kitlib.notebooks": "notebooks"},
    ext_modules=[
        Extension(
            "kitlib.formats.logs._scan",
            ["kitlib/formats/logs/_scan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ],
)
