"""A PEP 517 build backend for `pip install .` that needs nothing from PyPI: CMake builds the
module (the target orion_python, the same build `make` runs) and this file packs the package
folder it lays out, BUILD/python/orion, into a wheel.

The build folder is ORION_BUILD_DIR, else build/ beside pyproject.toml: a tree `make` has
already built only packs (the module is built there for the interpreter it names; a build for
another interpreter is configured again for this one, -DPython_EXECUTABLE). A fresh clone
configures and builds the libraries first, which takes as long as `make`.
"""
import base64
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _cached(build, name):
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return None
    m = re.search(rf"^{re.escape(name)}:[A-Z]+=(.*)$", cache.read_text(), re.M)
    return m.group(1) if m else None


def _build_module(build):
    # Configured for this interpreter unless it is already (the same ABI: its module's suffix).
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    # The interpreter find_package(Python) chose: a user's -DPython_EXECUTABLE, else the one it
    # found itself (CMakeLists.txt's /usr/bin/python3 on Linux), which it keeps as internal. Not
    # reading the second reconfigured `make`'s own build for the venv's interpreter, which the
    # venv's removal then left pointing at nothing.
    built_for = _cached(build, "Python_EXECUTABLE") or _cached(build, "_Python_EXECUTABLE")
    same = built_for and os.path.exists(built_for) and subprocess.run(
        [built_for, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True).stdout.strip() == suffix
    if _cached(build, "ORION_PYTHON") != "ON" or not same:
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DORION_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"], check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "orion_python"], check=True)
    package = build / "python" / "orion"
    if not (package / f"_orion{suffix}").exists():
        raise RuntimeError(f"orion_build: {package} has no _orion{suffix} after the build")
    return package


def _tag():
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{py}-{py}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    build = pathlib.Path(os.environ.get("ORION_BUILD_DIR") or ROOT / "build").resolve()
    package = _build_module(build)
    dist_info = f"{project['name']}-{project['version']}.dist-info"
    wheel = f"{project['name']}-{project['version']}-{_tag()}.whl"
    files = {f"orion/{p.name}": p.read_bytes() for p in sorted(package.iterdir()) if p.is_file()}
    files[f"{dist_info}/METADATA"] = _metadata(project).encode()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: orion_build\nRoot-Is-Purelib: false\n"
                                   f"Tag: {_tag()}\n").encode()
    record = [_record_line(name, data) for name, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel
