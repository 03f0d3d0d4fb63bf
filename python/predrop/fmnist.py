"""Fashion-MNIST from Debian's IDX files (package dataset-fashion-mnist) as torch tensors."""

import gzip
import os

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {body.size} bytes of data, the header says {shape}")
    return body.reshape(shape)


def load(directory=DEFAULT_DIR, split="train"):
    """(images N x 1 x 28 x 28 float32 in [0, 1], labels N int64) of ``split`` train or t10k."""
    import torch
    prefix = "train" if split == "train" else "t10k"
    def path(kind):
        p = os.path.join(directory, f"{prefix}-{kind}")
        return p + ".gz" if os.path.exists(p + ".gz") else p
    try:
        images = _read_idx(path("images-idx3-ubyte"))
        labels = _read_idx(path("labels-idx1-ubyte"))
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{e} (Debian: apt-get install dataset-fashion-mnist)") from e
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y
