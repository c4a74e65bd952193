#!/usr/bin/python3
"""Times PyTorch's n x n x n matmul on a CUDA device in one precision as ParaScope's
`bench gpu --pytorch` does its own cuBLAS call (two untimed calls, then the best of --reps, each
between CUDA events, inputs random in [-1, 1]) and prints one JSON line.

usage: torch_gemm_peak.py --precision fp32|tf32|bf16|fp16 [--n N] [--reps R] [--device D]
"""
import argparse
import json

import torch

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
          "fp16": torch.float16}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", choices=sorted(DTYPES), required=True)
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--device", type=int, default=0)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    dev = torch.device("cuda", a.device)
    gen = torch.Generator(device=dev).manual_seed(1)
    x = (torch.rand(a.n, a.n, device=dev, generator=gen) * 2 - 1).to(DTYPES[a.precision])
    y = (torch.rand(a.n, a.n, device=dev, generator=gen) * 2 - 1).to(DTYPES[a.precision])
    for _ in range(2):
        torch.matmul(x, y)
    best = float("inf")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(a.reps):
        start.record()
        torch.matmul(x, y)
        stop.record()
        stop.synchronize()
        best = min(best, start.elapsed_time(stop) / 1e3)
    print(json.dumps({"precision": a.precision, "n": a.n, "seconds_per_call": best,
                      "flops_per_s": 2.0 * a.n ** 3 / best, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
