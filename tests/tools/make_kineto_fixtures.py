#!/usr/bin/python3
"""Writes the small PyTorch profiler (Kineto) traces under tests/fixtures/kineto/ that the
importer, analysis and timeline tests read on every clone:
    python3 tests/tools/make_kineto_fixtures.py [OUTDIR]

Every event is listed below in a table with its times, so each expected value in the tests
(breakdowns, counts, bytes) can be worked out by hand from this file; tests/fixtures/kineto/
README.md says what each trace exercises. The layout follows what torch.profiler writes
(schemaVersion, distributedInfo, "M" metadata, "X" spans with Kineto's categories, "s"/"f"
flows, the "Spans"/"Traces" rows), but every name, id and time here is made up. Standard
library only; the output is deterministic.
"""
import gzip
import json
import os
import sys


class Raw(str):
    """A JSON number written exactly as given (microseconds with the decimals Kineto uses)."""


def us_int(ns):  # PyTorch 1.x / 2.0: whole microseconds
    assert ns % 1000 == 0
    return Raw(str(ns // 1000))


def us_dur(ns):  # durations of older traces: "68.0"
    assert ns % 1000 == 0
    return Raw("%d.0" % (ns // 1000))


def us_ns(ns):  # PyTorch 2.x nanosecond resolution: "1712195495520870.926"
    return Raw("%d.%03d" % (ns // 1000, ns % 1000))


def value(v):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + value(x) for k, x in v.items()) + "}"
    return json.dumps(v)


def write(path, header, events):
    """Kineto's layout, one event per line; gzip-compressed (no name, no time) for ".gz"."""
    lines = ["{"]
    for k, v in header.items():
        lines.append("  %s: %s," % (json.dumps(k), value(v)))
    lines.append('  "traceEvents": [')
    lines.append(",\n".join("  " + value(e) for e in events))
    lines.append("]}")
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if path.endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


def meta(name, pid, tid, ts, key, v):
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": ts, "args": {key: v}}


def span(cat, name, pid, tid, ts, dur, args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def profiler_rows(ts_start, ts_end, dur):
    """The rows every Kineto trace ends with: the profiling span and two global instants."""
    return [
        span("Trace", "PyTorch Profiler (0)", "Spans", "PyTorch Profiler", ts_start, dur,
             {"Op count": 0}),
        meta("process_sort_index", "Spans", 0, ts_start, "sort_index", 536870912),
        {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
         "tid": "Trace PyTorch Profiler", "ts": ts_start},
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": ts_end},
    ]


# --- Two ranks of a GPU job (PyTorch 1.x style: whole-microsecond times) -------------------------
#
# Times are microseconds after GPU_BASE. Stream 7 runs compute kernels, copies and memsets,
# stream 20 runs NCCL. Each GPU op is (kind, name, stream, start, duration, launch thread,
# launch start); its launch is a 5 us cuda_runtime call sharing its correlation id.

GPU_BASE = 1700000000000000
SGEMM = "ampere_sgemm_128x64_nn"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1>)")
REDUCE = "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)"
ADAM = "void at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<4> >(int)"
NCCL_AR = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
NCCL_AG = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
HTOD = "Memcpy HtoD (Pageable -> Device)"
DTOH = "Memcpy DtoH (Device -> Pageable)"
MEMSET = "Memset (Device)"
MAIN, BWD = "main", "backward"

# Rank 0. Steps 10 = [100, 1000) and 11 = [1000, 2000).
GPU_OPS_RANK0 = [
    ("kernel", ELEMENTWISE, 7, 50, 40, MAIN, 30),  # before the first step: in no window
    ("gpu_memcpy", HTOD, 7, 110, 20, MAIN, 90),
    ("kernel", SGEMM, 7, 130, 200, MAIN, 110),
    ("kernel", "ampere_sgemm_64x64_tn", 7, 330, 120, MAIN, 310),
    ("kernel", NCCL_AR, 20, 400, 300, BWD, 380),
    ("gpu_memset", MEMSET, 7, 460, 10, MAIN, 440),  # inside the all-reduce
    ("kernel", REDUCE, 7, 750, 50, MAIN, 730),
    ("gpu_memcpy", DTOH, 7, 800, 20, MAIN, 780),
    ("kernel", "ampere_sgemm_128x64_nt", 7, 950, 100, MAIN, 930),  # across the step boundary
    ("kernel", "ampere_sgemm_128x128_nn", 7, 1100, 300, MAIN, 1080),
    ("kernel", NCCL_AR, 20, 1300, 200, BWD, 1280),
    ("gpu_memset", MEMSET, 7, 1500, 10, MAIN, 1480),
    ("kernel", NCCL_AG, 20, 1600, 100, BWD, 1580),
    ("kernel", ADAM, 7, 1800, 100, MAIN, 1780),
    ("gpu_memcpy", DTOH, 7, 1950, 100, MAIN, 1930),  # past the last step's end
]

# Rank 1: rank 0's ops 5 us later, without the first kernel, with a longer first all-reduce
# (400 us) and a longer kernel before the second (350 us).
GPU_OPS_RANK1 = [
    ("gpu_memcpy", HTOD, 7, 115, 20, MAIN, 95),
    ("kernel", SGEMM, 7, 135, 200, MAIN, 115),
    ("kernel", "ampere_sgemm_64x64_tn", 7, 335, 120, MAIN, 315),
    ("kernel", NCCL_AR, 20, 405, 400, BWD, 385),
    ("gpu_memset", MEMSET, 7, 465, 10, MAIN, 445),
    ("kernel", REDUCE, 7, 755, 50, MAIN, 735),
    ("gpu_memcpy", DTOH, 7, 805, 20, MAIN, 785),
    ("kernel", "ampere_sgemm_128x64_nt", 7, 955, 100, MAIN, 935),
    ("kernel", "ampere_sgemm_128x128_nn", 7, 1105, 350, MAIN, 1085),
    ("kernel", NCCL_AR, 20, 1305, 200, BWD, 1285),
    ("gpu_memset", MEMSET, 7, 1505, 10, MAIN, 1485),
    ("kernel", NCCL_AG, 20, 1605, 100, BWD, 1585),
    ("kernel", ADAM, 7, 1805, 100, MAIN, 1785),
    ("gpu_memcpy", DTOH, 7, 1955, 100, MAIN, 1935),
]

LAUNCH = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync",
          "gpu_memset": "cudaMemsetAsync"}

# Host spans (category, name, thread, start, duration), times relative to the rank's shift.
# The operators wrap the launches of the ops above.
HOST_OPS = [
    ("cpu_op", "aten::fill_", MAIN, 28, 9),  # rank 0 only (its first kernel)
    ("cpu_op", "aten::copy_", MAIN, 88, 9),
    ("user_annotation", "ProfilerStep#10", MAIN, 100, 900),
    ("cpu_op", "aten::mm", MAIN, 108, 10),
    ("cpu_op", "aten::mm", MAIN, 308, 10),
    ("user_annotation", "nccl:all_reduce", BWD, 378, 12),
    ("cpu_op", "aten::zero_", MAIN, 438, 9),
    ("cpu_op", "aten::sum", MAIN, 728, 9),
    ("cpu_op", "aten::copy_", MAIN, 778, 9),
    ("cpu_op", "aten::mm", MAIN, 928, 9),
    ("user_annotation", "ProfilerStep#11", MAIN, 1000, 1000),
    ("cpu_op", "aten::mm", MAIN, 1078, 9),
    ("cpu_op", "autograd::engine::evaluate_function: MmBackward0", BWD, 1200, 70),
    ("user_annotation", "nccl:all_reduce", BWD, 1278, 12),
    ("cpu_op", "aten::zero_", MAIN, 1478, 9),
    ("user_annotation", "nccl:_all_gather_base", BWD, 1578, 12),
    ("user_annotation", "Optimizer.step#AdamW.step", MAIN, 1770, 30),
    ("cpu_op", "aten::_foreach_add_", MAIN, 1778, 9),
    ("cpu_op", "aten::copy_", MAIN, 1928, 9),
]


def gpu_rank(rank, ops, shift, first_correlation):
    pid = 4100 + 200 * rank
    tids = {MAIN: pid, BWD: pid + 100}
    t = lambda us: us_int((GPU_BASE + us) * 1000)
    d = lambda us: us_dur(us * 1000)
    events = []
    external = 100 * (rank + 1)
    for cat, name, thread, start, dur in HOST_OPS:
        if name == "aten::fill_" and rank != 0:
            continue
        external += 1
        start += shift
        events.append(span(cat, name, pid, tids[thread], t(start), d(dur),
                           {"External id": external}))
    correlation = first_correlation
    for kind, name, stream, start, dur, thread, launch in ops:
        args = {"External id": correlation, "cbid": 211 if kind == "kernel" else 51,
                "correlation": correlation}
        events.append(span("cuda_runtime", LAUNCH[kind], pid, tids[thread], t(launch), d(5), args))
        gpu_args = {"External id": correlation, "device": rank, "context": 1, "stream": stream,
                    "correlation": correlation}
        if kind != "kernel":
            gpu_args["bytes"] = 4096
        events.append(span(kind, name, rank, stream, t(start), d(dur), gpu_args))
        events.append({"ph": "s", "id": correlation, "pid": pid, "tid": tids[thread],
                       "ts": t(launch), "cat": "ac2g", "name": "ac2g"})
        events.append({"ph": "f", "id": correlation, "pid": rank, "tid": stream, "ts": t(start),
                       "cat": "ac2g", "name": "ac2g", "bp": "e"})
        correlation += 1
    # A runtime call with a correlation id and no GPU op (a flow source that links nowhere), and
    # a synchronisation, which is not a launch.
    events.append(span("cuda_runtime", "cudaEventRecord", pid, pid, t(1940 + shift), d(2),
                       {"External id": correlation, "cbid": 135, "correlation": correlation}))
    events.append(span("cuda_runtime", "cudaStreamSynchronize", pid, pid, t(1945 + shift), d(110),
                       {"External id": correlation + 1, "cbid": 131,
                        "correlation": correlation + 1}))
    label = "trainer:%d" % rank
    start = t(0)
    for p, labels, sort in ((pid, "CPU", pid), (rank, "GPU %d" % rank, 16777216 + rank)):
        events += [meta("process_name", p, 0, start, "name", label),
                   meta("process_labels", p, 0, start, "labels", labels),
                   meta("process_sort_index", p, 0, start, "sort_index", sort)]
    for p, tid, name in ((rank, 7, "stream 7 "), (rank, 20, "stream 20 "),
                         (pid, pid, "thread %d (python3)" % pid),
                         (pid, pid + 100, "thread %d (python3)" % (pid + 100))):
        events += [meta("thread_name", p, tid, start, "name", name),
                   meta("thread_sort_index", p, tid, start, "sort_index", tid)]
    events += profiler_rows(t(0), t(2100), d(2100))
    header = {"schemaVersion": 1, "record_shapes": 1,
              "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 8}}
    return header, events


# --- A CPU-only rank (gloo; three decimals of microseconds) --------------------------------------
#
# Rank 3 of 6. Times are nanoseconds after CPU_BASE (so 150125 is 150.125 us). Step 7 is
# [100250, 1100750). Threads 901 and 902 run gloo's all-reduces beside the main thread 900.

CPU_BASE = 1300000000000000000  # ns
CPU_SPANS = [
    ("user_annotation", "gloo:all_reduce", 901, 150125, 300500, [262144]),
    ("user_annotation", "gloo:all_reduce", 901, 700000, 200000, [262144]),
    ("user_annotation", "gloo:all_reduce", 902, 400500, 200000, [1048576]),
    ("user_annotation", "gloo:all_reduce", 902, 1050250, 150000, [1048576]),  # past the step
    ("user_annotation", "ProfilerStep#7", 900, 100250, 1000500, None),
    ("cpu_op", "aten::empty", 900, 95000, 10000, None),  # starts before the step
    ("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 900,
     110000, 30000, None),
    ("cpu_op", "aten::add", 900, 460000, 20000, None),  # while an all-reduce runs
    ("cpu_op", "aten::mul", 900, 950000, 10000, None),
    ("user_annotation", "Optimizer.step#SGD.step", 900, 1000000, 40000, None),
    ("cpu_op", "aten::empty", 900, 1150000, 503, None),  # after the step
]


def cpu_rank():
    events = []
    for i, (cat, name, tid, start, dur, dims) in enumerate(CPU_SPANS):
        args = {"External id": 1000 + i, "Record function id": 0}
        if dims:
            args.update({"Concrete Inputs": [""], "Input type": ["float"], "Input Dims": [dims]})
        args["Ev Idx"] = i
        events.append(span(cat, name, 900, tid, us_ns(CPU_BASE + start), us_ns(dur), args))
    start = us_ns(CPU_BASE + 90000)
    events += [meta("process_name", 900, 0, start, "name", "trainer:3"),
               meta("process_labels", 900, 0, start, "labels", "CPU"),
               meta("process_sort_index", 900, 0, start, "sort_index", 900)]
    for tid in (902, 901, 901, 900):  # Kineto repeats some thread names
        events += [meta("thread_name", 900, tid, start, "name", "thread %d (python3)" % tid),
                   meta("thread_sort_index", 900, tid, start, "sort_index", tid)]
    events += profiler_rows(start, us_ns(CPU_BASE + 1250000), us_ns(1160000))
    all_ranks = list(range(6))
    header = {
        "schemaVersion": 1, "deviceProperties": [],
        "distributedInfo": {
            "backend": "gloo", "rank": 3, "world_size": 6, "pg_count": 2,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                           "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 6,
                           "ranks": all_ranks},
                          {"pg_name": "1", "pg_desc": "undefined",
                           "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 6,
                           "ranks": all_ranks}]},
        "INFO": ["INFO: profiler started", "INFO: 1 iterations"],
        "traceName": "/tmp/cpu-only-rank3.json", "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1300000000000000000}
    return header, events


# --- PyTorch 2.x, nanosecond resolution, record_param_comms ---------------------------------------
#
# Rank 0 of 2. Times are nanoseconds after NS_BASE. Process group 0 is both ranks, group 1 is
# rank 0 alone. Each collective is (name, thread, start, duration, group, dtype, elements),
# wrapping an "nccl:..." annotation and, on group 0, an NCCL kernel on stream 20.

NS_BASE = 1712000000000000000
COLLECTIVES = [
    ("broadcast", MAIN, 110926, 59283, 0, "Float", 1000),
    ("wait", MAIN, 175331, 3279, None, None, 0),
    ("broadcast", MAIN, 180004, 41997, 0, "Float", 1000),
    ("wait", MAIN, 225100, 2002, None, None, 0),
    ("allreduce", BWD, 300250, 36526, 0, "Float", 2500),
    ("allreduce", BWD, 400500, 34057, 0, "Float", 2500),
    ("allreduce", BWD, 450125, 12345, 1, "BFloat16", 512),  # a group of one
    ("allreduce", BWD, 500750, 31289, 0, "Float", 2500),
    ("allreduce", BWD, 550001, 10001, 1, "BFloat16", 512),
    ("wait", MAIN, 600999, 1001, None, None, 0),
]
NCCL_KERNELS = {"broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, "
                             "ncclWork*)",
                "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned "
                             "long, ncclWork*)"}
ANNOTATIONS = {"broadcast": "nccl:broadcast", "allreduce": "nccl:all_reduce"}


def ns_rank():
    pid = 1200
    tids = {MAIN: pid, BWD: pid + 90}
    t = lambda ns: us_ns(NS_BASE + ns)
    events = [span("user_annotation", "ProfilerStep#3", pid, pid, t(100117), us_ns(800728),
                   {"External id": 1, "Ev Idx": 0})]
    correlation = 5001
    for i, (name, thread, start, dur, group, dtype, n) in enumerate(COLLECTIVES):
        tid = tids[thread]
        args = {"External id": 10 + i, "Collective name": name, "dtype": dtype or "Byte",
                "In msg nelems": n}
        if group is None:  # waits name no group
            args.update({"Global rank start": -1, "Group size": 1, "Out msg nelems": 0,
                         "Global rank stride": -1, "Process Group ID": 0})
        else:
            ranks = "[0, 1]" if group == 0 else "[0]"
            args.update({"Global rank start": 0, "Group size": 2 if group == 0 else 1,
                         "Process Group Ranks": ranks, "Out msg nelems": n,
                         "Global rank stride": 1, "Process Group ID": group})
        args["Ev Idx"] = 10 + i
        events.append(span("cpu_op", "record_param_comms", pid, tid, t(start), us_ns(dur), args))
        if group is None:
            continue
        events.append(span("user_annotation", ANNOTATIONS[name], pid, tid, t(start + 1000),
                           us_ns(dur - 2000), {"External id": 100 + i, "Ev Idx": 100 + i}))
        if group != 0:
            continue
        launch = start + 3000
        events.append(span("cuda_runtime", "cudaLaunchKernel", pid, tid, t(launch), us_ns(4321),
                           {"External id": 100 + i, "cbid": 211, "correlation": correlation}))
        events.append(span("kernel", NCCL_KERNELS[name], 0, 20, t(launch + 20000), us_ns(25250),
                           {"External id": 100 + i, "queued": 0, "device": 0, "context": 1,
                            "stream": 20, "correlation": correlation,
                            "registers per thread": 96, "shared memory": 0,
                            "grid": [2, 1, 1], "block": [256, 1, 1]}))
        events.append({"ph": "f", "id": correlation, "pid": 0, "tid": 20,
                       "ts": t(launch + 20000), "cat": "ac2g", "name": "ac2g", "bp": "e"})
        events.append({"ph": "s", "id": correlation, "pid": pid, "tid": tid, "ts": t(launch),
                       "cat": "ac2g", "name": "ac2g"})
        correlation += 1
    # Forward -> backward link, an optimizer annotation on the GPU row and a device sync.
    events.append({"ph": "s", "id": 1, "pid": pid, "tid": pid, "ts": t(290000),
                   "cat": "fwdbwd", "name": "fwdbwd"})
    events.append({"ph": "f", "id": 1, "pid": pid, "tid": pid + 90, "ts": t(300250),
                   "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
    events.append(span("gpu_user_annotation", "Optimizer.step#SGD.step", 0, 7, t(700500),
                       us_ns(111035), {"External id": 900}))
    events.append(span("cuda_runtime", "cudaDeviceSynchronize", pid, pid, t(820449),
                       us_ns(80171), {"External id": 901, "cbid": 165, "correlation": 6001}))
    start = t(100000)
    events += [meta("process_name", pid, 0, start, "name", "python3 main"),
               meta("process_labels", pid, 0, start, "labels", "CPU"),
               meta("thread_name", 0, 20, start, "name", "stream 20 "),
               meta("thread_name", pid, pid, start, "name", "thread %d (python3)" % pid),
               meta("thread_name", pid, pid + 90, start, "name",
                    "thread %d (pt_autograd_0)" % (pid + 90))]
    events += profiler_rows(start, t(950000), us_ns(850000))
    header = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Example GPU", "totalGlobalMem": 34079637504,
                              "computeMajor": 7, "computeMinor": 0, "numSms": 80}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 2,
                            "pg_config": [{"pg_name": "0", "uid": 0, "backend_config": "cuda:nccl",
                                           "pg_size": 2, "ranks": [0, 1]},
                                          {"pg_name": "1", "uid": 1, "backend_config": "cuda:nccl",
                                           "pg_size": 1, "ranks": [0]}],
                            "nccl_version": "2.18.1"},
        "trace_id": "0123456789ABCDEF0123456789ABCDEF",
        "displayTimeUnit": "ns"}
    return header, events


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "fixtures", "kineto")
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "gpu-rank0.json.gz"), *gpu_rank(0, GPU_OPS_RANK0, 0, 1001))
    write(os.path.join(out, "gpu-rank1.json.gz"), *gpu_rank(1, GPU_OPS_RANK1, 5, 2002))
    write(os.path.join(out, "cpu-only-rank3.json"), *cpu_rank())
    write(os.path.join(out, "ns-resolution-rank0.json.gz"), *ns_rank())


if __name__ == "__main__":
    main()
