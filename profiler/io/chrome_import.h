// Reads Chrome Trace Event JSON: ParaScope's own files (exactly, to the ns), PyTorch Kineto
// traces (torch.profiler export_chrome_trace, HolisticTraceAnalysis samples) and the older
// torch 1.13 format (a bare array of "X" events with "pid": "CPU functions"). Foreign events
// are mapped onto ours (categories, GPU streams, steps, memory) so the analyses run on them.
// Bad input of any kind becomes a UserError naming the source and the line/column/byte.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct ImportOptions {
  std::size_t maxBytes = std::size_t{4} << 30;  // input size after gunzip
  std::size_t maxEvents = 50'000'000;
  std::int32_t defaultRank = 0;  // for traces that do not say which rank wrote them
  // Looked at between files and every 65536 events; once set, the import throws ImportCancelled
  // (a view closed while its trace loads does not wait for the rest of the file).
  const std::atomic<bool>* cancel = nullptr;
  // How much text is read and parsed at a time: the events array goes to the parser in runs of
  // whole events about this long, so an import holds its window (about 7 bytes per byte of it:
  // the text and the parser's index of it), not the whole text. It grows to hold one event.
  std::size_t windowBytes = std::size_t{4} << 20;
};

// One event, and the members before or after the events array together, may take at most this
// much JSON: a window grows to hold one of them whole.
inline constexpr std::size_t kMaxEventBytes = std::size_t{64} << 20;

struct ImportCancelled : std::runtime_error {
  ImportCancelled() : std::runtime_error("the import was cancelled") {}
};

// Names (of events, counters, ranks and threads) longer than this are clipped as they are
// imported: a view labels, measures and searches every name, and a 30 MB one cost the workbench
// minutes. docs/limits.md states the bound.
inline constexpr std::size_t kMaxNameBytes = 1024;
// `name` itself when it is at most kMaxNameBytes; otherwise its first kMaxNameBytes or fewer (at
// a UTF-8 character boundary) and the marker "... [clipped from N bytes]".
std::string clipName(std::string_view name);

// What importing `jsonBytes` of JSON holds at its peak, estimated: the window and the parser's
// index of it, and the events at the density of typical traces. UserError naming `what` when that
// exceeds `availableBytes` (ignored when negative): every import checks it against this
// machine's available memory before inflating or parsing; a trace of denser events than that is
// refused as its event table grows past what is available.
void checkImportMemory(const std::string& what, std::size_t jsonBytes, double availableBytes,
                       std::size_t windowBytes = ImportOptions{}.windowBytes);

TraceData importChromeTrace(const std::string& path, const ImportOptions& options = {});
// Several files as one trace, e.g. one file per rank. A file that does not say which rank wrote
// it (torch 1.13, or Kineto without distributedInfo) gets its position in `paths` as rank
// when there is more than one file.
TraceData importChromeTraces(const std::vector<std::string>& paths,
                             const ImportOptions& options = {});
// `source` names the data in error messages. Gzip data is inflated first.
TraceData importChromeTraceFromMemory(std::string_view data, const std::string& source,
                                      const ImportOptions& options = {});

}  // namespace parascope::profiler
