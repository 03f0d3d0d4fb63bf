"""Where the project's built files are: one lookup for the library and the server."""

import glob
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def find(env, relpath):
    """``$env`` if set, else REPO/build/release/relpath, else the newest REPO/build/*/relpath;
    None if none exists."""
    path = os.environ.get(env)
    if path:
        return path
    cands = [os.path.join(REPO, "build", "release", relpath)]
    cands += sorted(glob.glob(os.path.join(REPO, "build", "*", relpath)), key=os.path.getmtime,
                    reverse=True)
    return next((c for c in cands if os.path.exists(c)), None)
