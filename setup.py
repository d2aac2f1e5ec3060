"""The compiled part of the kit: one C file, the log4j block scan (kitlib/formats/_log4j_scan.c).

It is optional: where no C compiler is found the install goes on without it, and the log4j parser
uses its numpy path for every block (same tables, slower). Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kitlib.formats._log4j_scan",
            ["kitlib/formats/_log4j_scan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
