"""Regenerates the Python stubs of the contract into client/neardup_client/v1/.

Run after editing a .proto: `python proto/generate.py`. tests/service/test_proto_fresh.py fails when the committed
stubs differ from what this produces (needs grpcio-tools, pinned in the `test` extra).
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys
import tempfile

PROTO_ROOT = pathlib.Path(__file__).resolve().parent
OUT = PROTO_ROOT.parent / "client" / "neardup_client" / "v1"
PROTOS = ["neardup/v1/neardup.proto"]


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Writes the stubs into out_dir with package-relative imports, so they live inside neardup_client."""
    from grpc_tools import protoc
    import grpc_tools

    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={tmp}",
                          f"--pyi_out={tmp}", f"--grpc_python_out={tmp}", *PROTOS])
        if rc != 0:
            raise SystemExit(f"protoc failed with exit code {rc}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for src in sorted(pathlib.Path(tmp, "neardup", "v1").glob("*.py*")):
            text = re.sub(r"^from neardup\.v1 import", "from . import", src.read_text(), flags=re.M)
            dst = out_dir / src.name
            dst.write_text(text)
            written.append(dst)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
