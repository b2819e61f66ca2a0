"""Builds the C++ bridge against the torch that is installed, once per torch version and
source revision, into a cache directory (the Rust core itself is prebuilt and torch-free)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import torch

_SOURCES = (
    "attention.cpp",
    "autocast.cpp",
    "device.cpp",
    "kernels.cpp",
    "lstsq.cpp",
    "native.cpp",
    "pinned.cpp",
    "profiler.cpp",
)
_HEADERS = ("bridge.h", "tpurs_core_api.h")


def _csrc() -> Path:
    return Path(__file__).parent / "csrc"


def _cache_dir() -> Path:
    root = os.environ.get("TPURS_BRIDGE_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tpurs"


def _fingerprint() -> str:
    h = hashlib.sha256()
    for name in _SOURCES + _HEADERS:
        h.update((_csrc() / name).read_bytes())
    h.update(torch.__version__.encode())
    h.update(str(torch.compiled_with_cxx11_abi()).encode())
    h.update(sys.version.encode())
    return h.hexdigest()[:16]


def bridge_path() -> Path:
    """Path of the compiled bridge for this torch, building it if needed."""
    out_dir = _cache_dir() / f"bridge-{torch.__version__}-{_fingerprint()}"
    lib = out_dir / "libtpurs_bridge.so"
    if lib.exists():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not lib.exists():
            print(
                f"tpurs: building the C++ bridge for torch {torch.__version__} (first import with this torch "
                f"or tpurs version; about a minute, once) into {out_dir}",
                file=sys.stderr,
                flush=True,
            )
            _compile(lib)
    return lib


def _compile(lib: Path) -> None:
    """Compiles each source in its own g++ process (they run in parallel), then links."""
    torch_dir = Path(torch.__file__).parent
    abi = int(torch.compiled_with_cxx11_abi())
    cxx = os.environ.get("CXX", "g++")
    tmp_dir = lib.parent / f"objects.{os.getpid()}"
    tmp_dir.mkdir(exist_ok=True)
    flags = [
        "-std=c++20",
        "-O2",
        "-fPIC",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-I{torch_dir / 'include'}",
        f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-I{torch_dir / 'include' / 'kineto'}",
    ]
    objects = [tmp_dir / f"{Path(s).stem}.o" for s in _SOURCES]
    jobs = [
        subprocess.Popen(
            [cxx, *flags, "-c", str(_csrc() / s), "-o", str(o)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s, o in zip(_SOURCES, objects)
    ]
    errors = [err for job in jobs for _, err in [job.communicate()] if job.returncode != 0]
    tmp = lib.with_suffix(f".tmp{os.getpid()}")
    if not errors:
        link = [cxx, "-shared", *map(str, objects), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu"]
        link += [f"-Wl,-rpath,{torch_dir / 'lib'}", "-o", str(tmp)]
        result = subprocess.run(link, capture_output=True, text=True)
        if result.returncode != 0:
            errors.append(result.stderr)
    for o in objects:
        o.unlink(missing_ok=True)
    tmp_dir.rmdir()
    if errors:
        raise RuntimeError(
            "tpurs: building the C++ bridge against torch "
            f"{torch.__version__} failed (needs g++ with C++20):\n{''.join(errors)[-4000:]}"
        )
    tmp.rename(lib)
