"""Only the compiled parts live here (the pair kernel, the in-memory search index, the request path's id map, the n-gram hashing, the English and German stemmers, item pair features, Dedup's wire format, a cluster store's ids by shard); everything else is
declared in pyproject.toml."""
import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "neardup.core._kernel",
            sources=["server/neardup/core/_kernel.c"],
            depends=["server/neardup/core/_pair.h"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.core._search",
            sources=["server/neardup/core/_search.c", "server/neardup/core/_search_index.c",
                     "server/neardup/core/_search_file.c"],
            depends=["server/neardup/core/_pair.h", "server/neardup/core/_search_index.h"],
            extra_compile_args=["-O3", "-std=c99", "-fvisibility=hidden"],
        ),
        Extension(
            "neardup.core._id_map",
            sources=["server/neardup/core/_id_map.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.service._wire",
            sources=["server/neardup/service/_wire.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.core._items",
            sources=["server/neardup/core/_items.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.core._shingle",
            sources=["server/neardup/core/_shingle.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.core._stem",
            sources=["server/neardup/core/_stem.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
        Extension(
            "neardup.store._shards",
            sources=["server/neardup/store/_shards.c"],
            extra_compile_args=["-O3", "-std=c99"],
        ),
    ],
    # the extensions compile side by side, one per core (pip install, .ci/sanitize's build)
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
