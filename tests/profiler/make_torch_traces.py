#!/usr/bin/python3
"""Records the PyTorch profiler fixtures the importer tests read (tests/profiler/fixtures/).

Run with Debian's python3-torch (1.13, CPU only, the legacy trace format):
    /usr/bin/python3 tests/profiler/make_torch_traces.py [OUTDIR]
It writes
    torch_cpu_mlp.json.gz          a small MLP, two profiled training steps, CPU activities
    torch_gloo_rank0.json.gz       a two-process gloo run on 127.0.0.1 (all_reduce of the
    torch_gloo_rank1.json.gz       gradients, DDP-style by hand), one trace per rank
Timings differ from run to run; the tests check structure (ops, categories, ranks), not times.
"""
import gzip
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def train_steps(net, opt, steps, allreduce=False):
    for step in range(steps):
        with torch.profiler.record_function("ProfilerStep#%d" % step):
            x = torch.randn(8, 16)
            loss = net(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            if allreduce:
                for p in net.parameters():
                    dist.all_reduce(p.grad)
            opt.step()


def save_gz(src, dst):
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)


def record(path, steps, allreduce=False):
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    train_steps(net, opt, 1, allreduce)  # warm-up, not recorded
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=acts, record_shapes=False) as prof:
        train_steps(net, opt, steps, allreduce)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        save_gz(raw, path)


def gloo_worker(rank, world, outdir, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    record(os.path.join(outdir, "torch_gloo_rank%d.json.gz" % rank), steps=2, allreduce=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    record(os.path.join(outdir, "torch_cpu_mlp.json.gz"), steps=2)
    mp.spawn(gloo_worker, args=(2, outdir, 29517), nprocs=2, join=True)
    for name in sorted(os.listdir(outdir)):
        print(name, os.path.getsize(os.path.join(outdir, name)), "bytes")


if __name__ == "__main__":
    main()
