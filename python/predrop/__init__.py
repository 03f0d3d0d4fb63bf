"""predrop from Python: the DDL relay as a PyTorch DDP communication hook.

- ``predrop.torch``: ``RelayState`` and ``relay_hook`` for ``DistributedDataParallel``
  (``ddp_model.register_comm_hook(state, predrop.torch.relay_hook)``).
- ``predrop.capi``: the ctypes binding of ``libpredrop_ddl_capi.so`` (ddl/capi/, C ABI).
- ``predrop.relay``: starts ``predrop-server --mode ddl`` for a job on this machine.
- ``predrop.fmnist``: Debian's Fashion-MNIST IDX files as torch tensors.

``predrop.torch`` imports torch; the other modules need only the standard library (and numpy
for ``fmnist``). See docs/ddl-torch.md.
"""

__all__ = ["capi", "relay", "fmnist"]
