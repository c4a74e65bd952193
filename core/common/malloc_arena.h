// Threads allocating from the malloc arenas the process already has, not each from its own.
#pragma once

namespace parascope {

// Call first thing in main(), before the program starts threads. oneDNN's sgemm allocates and
// frees a workspace of about 2 MB on every product. A thread allocating for the first time gets
// a glibc arena of its own, and glibc unmaps that arena's heap (64 MiB reserved) whenever it
// empties and maps a new one on the next product: every product faults its workspace in again,
// and each of those faults flushes the TLB of every CPU running the process's other threads (an
// interrupt between CPUs, costly in a virtual machine). Measured on a 2-vCPU machine: the rank
// on a thread of its own in a 2-rank data-parallel run spent 5% of its time in those flushes and
// fell 20-40 ms per step behind the rank on the main thread. After this, new threads share the
// arenas there are (the main heap, which brk grows and shrinks in place). Does nothing outside
// glibc.
void shareMallocArenas();

}  // namespace parascope
