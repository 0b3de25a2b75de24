"""Packs the Python package's wheel from a native module cargo has already built.

CI builds the module (`npy-python`'s cdylib) in the every-feature step's own feature resolution,
where DataFusion is compiled already; `pip wheel ./npy-python` would have maturin run
`cargo rustc -p npy-python`, which resolves the package alone and compiles the whole DataFusion
graph a second time. The wheel's metadata is maturin's own (`maturin pep517 write-dist-info`,
from pyproject.toml and Cargo.toml); its layout is the one `tool.maturin` describes: the
`python-source` tree, with the native module at `module-name`.

    python .ci/wheel.py target/debug/lib_native.so target/wheels
"""

import base64
import hashlib
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "npy-python"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main(library, out_dir):
    maturin = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["tool"]["maturin"]
    module = maturin["module-name"]  # npy_serde._native
    source = PACKAGE / maturin.get("python-source", ".")
    native = module.replace(".", "/") + sysconfig.get_config_var("EXT_SUFFIX")
    files = {}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source).as_posix()
        # Not a module `maturin develop` left in the tree (an editable install's).
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".so":
            files[rel] = path.read_bytes()
    files[native] = Path(library).read_bytes()
    with tempfile.TemporaryDirectory() as meta:
        subprocess.run(
            [Path(sys.executable).parent / "maturin", "pep517", "write-dist-info",
             "--metadata-directory", meta, "--manifest-path", str(PACKAGE / "Cargo.toml"),
             "--interpreter", sys.executable],
            check=True, stdout=subprocess.DEVNULL,
        )
        (info,) = Path(meta).glob("*.dist-info")
        for path in sorted(info.rglob("*")):
            if path.is_file():
                files[f"{info.name}/{path.relative_to(info).as_posix()}"] = path.read_bytes()
        tag = next(line.split(": ", 1)[1] for line in (info / "WHEEL").read_text().splitlines()
                   if line.startswith("Tag: "))
        name = info.name[: -len(".dist-info")]
    record = f"{name}.dist-info/RECORD"
    lines = [record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{name}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    print(wheel)


if __name__ == "__main__":
    main(*sys.argv[1:])
