"""Only the compiled kernel lives here; everything else is declared in pyproject.toml."""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "neardup.core._kernel",
            sources=["server/neardup/core/_kernel.c"],
            extra_compile_args=["-O3", "-std=c99"],
        )
    ]
)
