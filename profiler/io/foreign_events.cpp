// Mapping of Kineto / legacy torch.profiler events onto ParaScope categories.
#include "profiler/io/foreign_events.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace parascope::profiler {

bool containsNoCase(std::string_view s, std::string_view needle) {
  auto it = std::search(s.begin(), s.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a + 32 : a) == b; });
  return it != s.end();
}

namespace {

bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

bool isCommunicationOp(std::string_view name) {
  return startsWith(name, "nccl:") || startsWith(name, "gloo:") || startsWith(name, "mpi:") ||
         startsWith(name, "c10d::") || startsWith(name, "c10d:") || name == "record_param_comms" ||
         startsWith(name, "ProcessGroup");
}

std::int32_t profilerStep(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!startsWith(name, kPrefix)) return -1;
  std::int32_t n = -1;
  auto digits = name.substr(kPrefix.size());
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return (r.ec == std::errc() && r.ptr == digits.data() + digits.size() && n >= 0) ? n : -1;
}

ForeignMapping mapHostOp(std::string_view name, Category otherwise) {
  ForeignMapping m;
  if (std::int32_t s = profilerStep(name); s >= 0) {
    m.category = Category::Step;
    m.step = s;
  } else if (isCommunicationOp(name)) {
    m.category = Category::Communication;
  } else if (startsWith(name, "Optimizer.step") || startsWith(name, "Optimizer.zero_grad")) {
    m.category = Category::Optimizer;
  } else if (startsWith(name, "enumerate(DataLoader)")) {
    m.category = Category::DataLoad;
  } else {
    m.category = otherwise;
  }
  return m;
}

}  // namespace

ForeignMapping mapForeignEvent(std::string_view cat, std::string_view name) {
  ForeignMapping m;
  if (cat == "kernel") {
    m.gpu = true;
    m.category = containsNoCase(name, "nccl") ? Category::Communication : Category::Compute;
  } else if (cat == "gpu_memcpy") {
    m.gpu = true;
    m.category = Category::Memcpy;
  } else if (cat == "gpu_memset") {
    m.gpu = true;
    m.category = Category::Memset;
  } else if (cat == "gpu_user_annotation") {
    m.gpu = true;
    m.category = Category::Host;
  } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
    m.category = containsNoCase(name, "synchronize") ? Category::Sync : Category::Runtime;
    m.flowSource = m.category == Category::Runtime;
  } else if (cat == "cuda_sync") {
    m.category = Category::Sync;
  } else if (cat == "overhead") {
    m.category = Category::Overhead;
  } else if (cat == "cpu_op" || cat.empty() || cat == "Operator") {
    m = mapHostOp(name, Category::Compute);
  } else if (cat == "user_annotation") {
    m = mapHostOp(name, Category::Host);
  } else {
    m.category = Category::Host;  // python_function, Trace, cpu_instant_event, ...
  }
  return m;
}

std::string_view exportCategory(const Event& e) {
  const std::string_view ours = trace::categoryName(e.category);
  if (e.kind != EventKind::Span) return ours;
  const bool nccl = containsNoCase(e.name, "nccl");
  if (trace::lane::isGpu(e.lane)) {
    switch (e.category) {
      case Category::Compute: return nccl ? ours : "kernel";
      case Category::Communication: return nccl ? "kernel" : ours;
      case Category::Memcpy: return "gpu_memcpy";
      case Category::Memset: return "gpu_memset";
      default: return ours;
    }
  }
  if (e.lane != trace::lane::kRuntime) return ours;
  switch (e.category) {
    case Category::Runtime: return containsNoCase(e.name, "synchronize") ? ours : "cuda_runtime";
    case Category::Sync: return "cuda_sync";
    default: return ours;
  }
}

void tagStepsFromSpans(TraceData& trace) {
  auto& ev = trace.events;
  std::size_t begin = 0;
  while (begin < ev.size()) {
    std::size_t end = begin;
    while (end < ev.size() && ev[end].rank == ev[begin].rank) ++end;
    std::vector<const Event*> steps;
    for (std::size_t i = begin; i < end; ++i) {
      if (ev[i].category == Category::Step && ev[i].kind == EventKind::Span && ev[i].step >= 0) {
        steps.push_back(&ev[i]);
      }
    }
    // Steps on one rank do not overlap and are sorted by start like the events.
    std::size_t s = 0;
    for (std::size_t i = begin; i < end && !steps.empty(); ++i) {
      Event& e = ev[i];
      while (s + 1 < steps.size() && steps[s]->endNs <= e.startNs) ++s;
      if (e.step < 0 && !trace::lane::isGpu(e.lane) && e.startNs >= steps[s]->startNs &&
          e.endNs <= steps[s]->endNs) {
        e.step = steps[s]->step;
      }
    }
    begin = end;
  }
}

}  // namespace parascope::profiler

namespace parascope::profiler {

namespace {

// "[0, 1, 2]" -> {0, 1, 2}; non-digits separate numbers.
std::vector<std::int64_t> parseIntList(std::string_view s) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < s.size();) {
    if ((s[i] < '0' || s[i] > '9') && s[i] != '-') {
      ++i;
      continue;
    }
    std::int64_t v = 0;
    auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (r.ec != std::errc()) break;
    out.push_back(v);
    i = static_cast<std::size_t>(r.ptr - s.data());
  }
  return out;
}

std::vector<std::int64_t> groupMembers(const KinetoCollective& c) {
  std::vector<std::int64_t> ranks = parseIntList(c.groupRanks);
  if (ranks.empty() && c.groupSize > 0 && c.rankStart >= 0 && c.rankStride > 0) {
    for (std::int64_t i = 0; i < c.groupSize; ++i) ranks.push_back(c.rankStart + i * c.rankStride);
  }
  return ranks;
}

bool isAny(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// All-to-all: per peer from the input split sizes (rows of equal size), or an even share.
void allToAll(const KinetoCollective& c, const std::vector<std::int64_t>& ranks, std::size_t me,
              std::int64_t elementBytes, CollectiveTraffic& t) {
  const std::vector<std::int64_t> splits = parseIntList(c.inSplits);
  const std::int64_t n = static_cast<std::int64_t>(ranks.size());
  std::int64_t rows = 0;
  for (std::int64_t s : splits) rows += s;
  const bool bySplit = splits.size() == ranks.size() && rows > 0 && c.inElements % rows == 0;
  for (std::size_t q = 0; q < ranks.size(); ++q) {
    if (q == me) continue;
    const std::int64_t bytes = bySplit ? splits[q] * (c.inElements / rows) * elementBytes
                                       : c.inElements / n * elementBytes;
    t.peers.push_back({static_cast<std::int32_t>(ranks[q]), bytes});
    t.sentBytes += bytes;
  }
}

}  // namespace

std::int64_t dtypeBytes(std::string_view d) {
  if (isAny(d, {"Double", "Long", "ComplexFloat"})) return 8;
  if (isAny(d, {"Float", "Int", "ComplexHalf"})) return 4;
  if (isAny(d, {"Half", "BFloat16", "Short"})) return 2;
  if (isAny(d, {"Byte", "Char", "Bool", "Float8_e4m3fn", "Float8_e5m2", "QInt8", "QUInt8"})) {
    return 1;
  }
  if (d == "ComplexDouble") return 16;
  return 0;
}

CollectiveTraffic collectiveTraffic(const KinetoCollective& c, std::int32_t rank) {
  CollectiveTraffic t;
  const std::vector<std::int64_t> ranks = groupMembers(c);
  const std::int64_t n = static_cast<std::int64_t>(ranks.size());
  const std::int64_t e = dtypeBytes(c.dtype);
  auto at = std::find(ranks.begin(), ranks.end(), rank);
  if (n < 2 || e == 0 || at == ranks.end()) return t;
  const auto me = static_cast<std::size_t>(at - ranks.begin());
  const std::string_view op = c.name;
  std::int64_t ring = 0;  // bytes to the next rank of the ring
  if (isAny(op, {"allreduce", "all_reduce", "allreduce_coalesced"})) {
    ring = 2 * (n - 1) * c.inElements * e / n;
  } else if (isAny(op, {"allgather", "all_gather", "_allgather_base",
                        "allgather_into_tensor_coalesced", "all_gather_into_tensor"})) {
    ring = (n - 1) * c.outElements * e / n;
  } else if (isAny(op, {"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                        "reduce_scatter_tensor_coalesced"})) {
    ring = (n - 1) * c.inElements * e / n;
  } else if (isAny(op, {"broadcast", "reduce"})) {
    ring = c.inElements * e;
  } else if (isAny(op, {"all_to_all", "alltoall", "alltoall_base", "all_to_allv"})) {
    allToAll(c, ranks, me, e, t);
    return t;
  }
  if (ring > 0) {
    t.sentBytes = ring;
    t.peers.push_back({static_cast<std::int32_t>(ranks[(me + 1) % ranks.size()]), ring});
  }
  return t;
}

}  // namespace parascope::profiler
