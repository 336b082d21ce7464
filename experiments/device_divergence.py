"""Where a spec computes differently on CUDA than on the CPU: every aten op of one call logged on both devices, the
first op whose outputs differ printed with its inputs. Usage on a GPU machine:
    python experiments/device_divergence.py SPEC_ID [--dtype float32] [--draws 300]
"""
import argparse
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class Log(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        flat, _ = tree_flatten(out)
        ins, _ = tree_flatten((args, kwargs))
        self.ops.append((str(func), [t.detach().cpu().clone() if isinstance(t, torch.Tensor) else t for t in ins],
                         [t.detach().cpu().clone() for t in flat if isinstance(t, torch.Tensor)]))
        return out


def run(fn, example, device, dtype):
    def move(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.to(device, dtype)
        return v.to(device) if isinstance(v, torch.Tensor) else v
    log = Log()
    with log:
        y = fn(move(example.x), **{k: move(v) for k, v in example.params.items()}, **example.hyper)
    return y.detach().cpu(), log.ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spec")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--draws", type=int, default=300)
    args = parser.parse_args()
    from hypothesis import HealthCheck, given, settings

    from conformance import registry

    spec = registry.specs()[args.spec]
    dtype = getattr(torch, args.dtype)
    examples = list(spec.edges()) if spec.edges is not None else []
    seen = []

    @settings(max_examples=args.draws, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(spec.examples())
    def collect(example):
        seen.append(example)

    collect()
    examples += seen
    differing = 0
    for n, example in enumerate(examples):
        y_cpu, ops_cpu = run(spec.fn, example, "cpu", dtype)
        y_cuda, ops_cuda = run(spec.fn, example, "cuda", dtype)
        if torch.equal(y_cpu, y_cuda):
            continue
        differing += 1
        if differing > 2:
            continue
        print(f"example {n}: max |cpu - cuda| {float((y_cpu.double() - y_cuda.double()).abs().max()):.3g}")
        for i, ((name, ins_c, outs_c), (_, ins_g, outs_g)) in enumerate(zip(ops_cpu, ops_cuda)):
            same_out = all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(outs_c, outs_g))
            if not same_out:
                same_in = all((not isinstance(a, torch.Tensor)) or torch.equal(a, b) for a, b in zip(ins_c, ins_g))
                print(f"  first differing op #{i}: {name} (inputs equal: {same_in})")
                for a, b in zip(ins_c, ins_g):
                    if isinstance(a, torch.Tensor):
                        print(f"    in  {a.dtype} {tuple(a.shape)} cpu {a.flatten()[:6].tolist()} cuda "
                              f"{b.flatten()[:6].tolist()}")
                    else:
                        print(f"    arg {a!r}")
                for a, b in zip(outs_c, outs_g):
                    bad = (a != b).nonzero()[:3].tolist() if a.shape == b.shape else "shape"
                    print(f"    out {a.dtype} differs at {bad}: cpu {a.flatten()[:6].tolist()} cuda "
                          f"{b.flatten()[:6].tolist()}")
                break
    print(f"{args.spec} {args.dtype}: {differing} of {len(examples)} examples differ between cpu and cuda")


if __name__ == "__main__":
    sys.exit(main())
