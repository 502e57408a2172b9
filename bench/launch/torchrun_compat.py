"""torchrun (torch.distributed.run) for Debian's python3-torch 1.13 on Python 3.11.

1.13's Std.from_str finds a value by iterating the IntFlag, and Python 3.11 no longer
yields the zero member there, so every torchrun start fails on "-r 0". This replaces that one
function (value lookup by number) and then runs torchrun's main unchanged.
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, vm):
    if re.fullmatch(r"\d+", vm):
        return cls(int(vm))
    return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}


api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.argv[0] = "torchrun"
    main()
