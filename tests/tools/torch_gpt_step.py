#!/usr/bin/python3
"""Trains the same GPT as ParaScope's bench step with PyTorch on one CPU thread and prints one
JSON line: tokens/s and step times. `parascope-cli bench step --pytorch` runs it side by side
with its own measurement. Needs Debian's python3-torch (/usr/bin/python3).

usage: torch_gpt_step.py [--steps N] [--warmup N] [--layers L] [--width C] [--heads H]
                         [--context T] [--batch B] [--vocab V]
"""
import argparse
import json
import os
import statistics
import sys
import time

# One BLAS thread, like ParaScope's ranks; OpenBLAS reads this when torch loads it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from make_gpt_reference import GPT  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = dict(vocab_size=a.vocab, context_length=a.context, hidden_size=a.width,
               num_attention_heads=a.heads, num_layers=a.layers, mlp_ratio=4)
    model = GPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    times = []
    for i in range(a.warmup + a.steps):
        tokens = torch.randint(0, a.vocab, (a.batch, a.context + 1))
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "threads": 1,
                      "step_time_median_s": median, "step_time_min_s": min(times),
                      "tokens_per_s": a.batch * a.context / median}))


if __name__ == "__main__":
    main()
