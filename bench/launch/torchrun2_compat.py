"""torchrun (torch.distributed.run) for a PyTorch 2.x built without libuv (Debian 13's 2.6,
Debian sid's 2.14).

torchrun 2.6 and 2.14 make every TCPStore of their own (the static rendezvous, the c10d
rendezvous backend, the dynamic rendezvous's shared store) with the Python binding's default
use_libuv=True, which such a build refuses ("use_libuv was requested but PyTorch was build
without libuv support"; 2.14 raises it as DistStoreError). On one node 2.6 uses the static
rendezvous and 2.14 the c10d one on localhost:0; both create their stores through these calls.
No option or environment variable reaches them: USE_LIBUV and `?use_libuv=0` are read only by
init_process_group's tcp:// and env:// stores and by
torch.distributed.elastic.utils.create_c10d_store. This makes use_libuv=False the default of
the TCPStore class torchrun's modules use (its server is then PyTorch's non-libuv
TCPStoreBackend; for a client the flag changes nothing on the wire), then runs torchrun's main
unchanged. Explicit use_libuv arguments are left alone.

Workers are not touched: a worker's init_process_group under torchrun's agent store also
builds its client with the default. Give them TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (rank 0
then hosts the workers' store) and USE_LIBUV=0 (which that store reads).
"""
import sys

import torch.distributed as dist

_TCPStore = dist.TCPStore


class TCPStoreNoLibuv(_TCPStore):
    def __init__(self, *args, **kwargs):
        if len(args) < 9:  # use_libuv is the binding's 9th parameter
            kwargs.setdefault("use_libuv", False)
        super().__init__(*args, **kwargs)


# Modules imported so far that bound the name, then the package for those imported later.
for _name, _module in list(sys.modules.items()):
    if _name.startswith("torch.distributed") and getattr(_module, "TCPStore", None) is _TCPStore:
        _module.TCPStore = TCPStoreNoLibuv

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.argv[0] = "torchrun"
    main()
