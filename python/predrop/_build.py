"""Where the project's built files are: one lookup for the library and the server."""

import glob
import os
import shutil
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Prefixes `cmake --install` may have used: this interpreter's (a venv), /usr/local, /usr.
PREFIXES = [sys.prefix, sys.base_prefix, "/usr/local", "/usr"]


def _installed(relpath):
    """REL's installed path: a library (ddl/capi/libX.so) in <prefix>/lib, an executable
    (server/predrop-server) in <prefix>/bin or on PATH; None if not installed."""
    name = os.path.basename(relpath)
    if name.endswith(".so"):
        subdirs = ["lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")]
        cands = [os.path.join(p, d, name) for p in PREFIXES for d in subdirs]
    else:
        cands = [os.path.join(p, "bin", name) for p in PREFIXES]
        found = shutil.which(name)
        if found:
            cands.append(found)
    return next((c for c in cands if os.path.exists(c)), None)


def find(env, relpath):
    """``$env`` if set, else REPO/build/release/relpath, else the newest REPO/build/*/relpath
    (a checkout), else the installed file (``cmake --install``); None if none exists."""
    path = os.environ.get(env)
    if path:
        return path
    cands = [os.path.join(REPO, "build", "release", relpath)]
    cands += sorted(glob.glob(os.path.join(REPO, "build", "*", relpath)), key=os.path.getmtime,
                    reverse=True)
    found = next((c for c in cands if os.path.exists(c)), None)
    return found or _installed(relpath)
