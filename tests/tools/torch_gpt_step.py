#!/usr/bin/python3
"""Trains the same GPT as ParaScope's bench step with PyTorch and prints one JSON line: tokens/s
and step times. One rank trains on one CPU thread; with --ranks N > 1 it trains with
DistributedDataParallel over gloo, N processes with one thread each, and rank 0 prints the
global tokens/s. With --device cuda it trains on the first GPU in fp32 with TF32 off, as
ParaScope's `device: "cuda"` does, each step timed to its last kernel, and also prints the peak
of torch.cuda.max_memory_allocated. On a GPU, --precision bf16 trains under autocast to bf16,
and --mode picks how: eager (the attention's products written out, AdamW's loop), sdpa
(scaled_dot_product_attention and the fused AdamW) or compile (the same under torch.compile);
sdpa and compile need PyTorch 2; --largest first doubles the micro-batch while a step fits the
GPU's memory and trains at the largest that did. `parascope-cli bench step [--dp N] [--device cuda] --pytorch`
runs it side by side with its own measurement. Needs Debian's python3-torch (/usr/bin/python3),
or a PyTorch with CUDA for --device cuda.

usage: torch_gpt_step.py [--ranks N] [--steps N] [--warmup N] [--layers L] [--width C]
                         [--heads H] [--context T] [--batch B] [--vocab V] [--device cpu|cuda]
                         [--precision fp32|bf16] [--mode eager|sdpa|compile] [--largest]
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

# One BLAS thread per rank, like ParaScope's ranks; OpenBLAS reads this when torch loads it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from make_gpt_reference import GPT  # noqa: E402


def train(rank, a, port):
    if a.ranks > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = dict(vocab_size=a.vocab, context_length=a.context, hidden_size=a.width,
               num_attention_heads=a.heads, num_layers=a.layers, mlp_ratio=4)
    device = torch.device(a.device)
    if a.device == "cuda":
        # fp32 products as ParaScope's GPU run computes them (no TF32 rounding of the inputs).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = GPT(cfg).to(device)
    fused = a.mode != "eager"
    for block in model.h:
        block.sdpa = fused
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            **({"fused": True} if fused else {}))
    step_model = torch.compile(model) if a.mode == "compile" else model
    if a.ranks > 1:
        step_model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    def autocast():
        if a.precision == "bf16":
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()
    def step(batch):
        tokens = torch.randint(0, a.vocab, (batch, a.context + 1), device=device)
        if a.ranks > 1:
            dist.barrier()
        if a.device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = step_model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    if a.largest:
        # Doubling the micro-batch from --batch while a step still fits the GPU's memory.
        fits = a.batch
        while True:
            try:
                step(fits * 2)
            except torch.cuda.OutOfMemoryError:
                break
            fits *= 2
        opt.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        a.batch = fits
    times = []
    for i in range(a.warmup + a.steps):
        elapsed = step(a.batch)
        if i >= a.warmup:
            times.append(elapsed)
    if rank == 0:
        median = statistics.median(times)
        line = {"framework": "pytorch-ddp" if a.ranks > 1 else "pytorch",
                "version": torch.__version__, "ranks": a.ranks, "threads_per_rank": 1,
                "device": a.device, "precision": a.precision, "mode": a.mode, "batch": a.batch,
                "step_time_median_s": median, "step_time_min_s": min(times),
                "tokens_per_s": a.ranks * a.batch * a.context / median}
        if a.device == "cuda":
            line["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
        print(json.dumps(line), flush=True)
    if a.ranks > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--batch", type=int, default=8, help="micro-batch per rank")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--mode", choices=["eager", "sdpa", "compile"], default="eager")
    p.add_argument("--largest", action="store_true",
                   help="train at the largest power-of-two multiple of --batch that fits the GPU")
    a = p.parse_args()
    if a.device == "cuda" and a.ranks != 1:
        p.error("--device cuda trains one rank")
    if a.device == "cpu" and (a.precision != "fp32" or a.mode != "eager" or a.largest):
        p.error("--precision bf16, --mode sdpa / compile and --largest are for --device cuda")
    if a.ranks == 1:
        train(0, a, 0)
    else:
        mp.spawn(train, args=(a, 29500 + os.getpid() % 2000), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
