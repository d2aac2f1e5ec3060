"""The compiled part of the kit: two C files, the log4j block scan (kitlib/formats/logs/_scan.c) and
template matching (kitlib/formats/logs/_match.c).

Both are optional: where no C compiler is found the install goes on without them, the log4j parser
uses its numpy path for every block and template matching its Arrow path (same tables, slower).

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
        ),
        Extension(
            "kitlib.formats.logs._match",
            ["kitlib/formats/logs/_match.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ],
)
