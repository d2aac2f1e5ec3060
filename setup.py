"""The compiled part of the kit: five C files, the log4j block scan (kitlib/formats/logs/_scan.c),
template matching (kitlib/formats/logs/_match.c), the literal prefilter of the extractors'
message patterns (kitlib/formats/logs/_prefilter.c), the cuts of the extraction rules' fixed
wordings (kitlib/extract/_cut.c) and the secret pre-check over columns (kitlib/redact/_precheck.c,
which shares its pre-check, kitlib/redact/_precheck.h, with the block scan).

All are optional: where no C compiler is found the install goes on without them, the log4j parser
uses its numpy path for every block, template matching its Arrow path, the prefilter Arrow's
literal search, the cuts Arrow's splits and the column pre-check RE2 over every value (same
tables, slower).

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
            depends=["kitlib/redact/_precheck.h"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kitlib.formats.logs._match",
            ["kitlib/formats/logs/_match.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kitlib.formats.logs._prefilter",
            ["kitlib/formats/logs/_prefilter.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kitlib.redact._precheck",
            ["kitlib/redact/_precheck.c"],
            depends=["kitlib/redact/_precheck.h"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kitlib.extract._cut",
            ["kitlib/extract/_cut.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ],
)
