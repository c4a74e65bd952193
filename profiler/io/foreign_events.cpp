// Mapping of Kineto / legacy torch.profiler events onto ParaScope categories.
#include "profiler/io/foreign_events.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace parascope::profiler {

namespace {

bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

bool containsNoCase(std::string_view s, std::string_view needle) {
  auto it = std::search(s.begin(), s.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a + 32 : a) == b; });
  return it != s.end();
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
