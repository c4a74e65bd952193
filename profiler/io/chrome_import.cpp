// Chrome trace importer over simdjson On Demand, streaming: the text is read a window at a time
// (from the file, from gzip as it inflates, or from memory), the events array is cut into runs
// of whole events by ArraySplitter and each run parsed as one small document, so what an import
// holds is its window and its events, never the whole text. The members around the events array
// are parsed as documents of their own. Events are stored as they come with their raw pid/tid,
// and ranks and lanes are resolved at the end, when the file's metadata (distributedInfo, thread
// names) is known. Names are interned and the event count is capped.
#include "profiler/io/chrome_import.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <unordered_map>

#include "core/common/error.h"
#include "core/plan/memory_estimate.h"
#include "profiler/io/foreign_events.h"
#include "profiler/io/json_split.h"
#include "profiler/io/trace_file.h"

namespace parascope::profiler {

namespace {

namespace od = simdjson::ondemand;

// Offset of the first byte that is not valid UTF-8 (scalar; only called once validation failed).
std::size_t firstInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    const bool overlong =
        (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n;
  }
  return s.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// A JSON number of microseconds to exact nanoseconds: decimal digits are taken as written, so
// "12.345" is 12345 ns with no floating-point rounding; more than three decimals round to the
// nearest ns; exponents go through double.
bool exponentMicrosToNs(std::string_view tok, std::int64_t* out) {
  double v = 0;
  auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) return false;
  const double ns = std::nearbyint(v * 1000.0);
  if (!(std::fabs(ns) < 9.2e18)) return false;
  *out = static_cast<std::int64_t>(ns);
  return true;
}

bool microsToNs(std::string_view tok, std::int64_t* out) {
  tok = trim(tok);
  if (tok.empty()) return false;
  const bool neg = tok[0] == '-';
  std::size_t i = neg ? 1 : 0;
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++digits) {
    if (whole > 9'000'000'000'000'000ULL / 10) return false;
    whole = whole * 10 + static_cast<unsigned>(tok[i] - '0');
  }
  if (digits == 0 || whole > 9'000'000'000'000'000ULL) return false;
  std::uint64_t frac = 0;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    int n = 0;
    bool roundUp = false;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++n) {
      if (n < 3) frac = frac * 10 + static_cast<unsigned>(tok[i] - '0');
      if (n == 3) roundUp = tok[i] >= '5';
    }
    if (n == 0) return false;
    for (; n < 3; ++n) frac *= 10;
    frac += roundUp ? 1 : 0;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) return exponentMicrosToNs(tok, out);
  if (i != tok.size()) return false;
  const std::uint64_t ns = whole * 1000 + frac;
  if (ns > 9'000'000'000'000'000'000ULL) return false;
  *out = neg ? -static_cast<std::int64_t>(ns) : static_cast<std::int64_t>(ns);
  return true;
}

struct ParseFailure {
  std::string what;
  std::size_t offset = SIZE_MAX;  // where it went wrong, when known better than simdjson's place
};

// simdjson reports unbalanced input without a useful place; one scalar pass (error path only)
// finds whether the input ends inside a string or container, or carries data after the root.
ParseFailure structureFailure(std::string_view d) {
  int depth = 0;
  bool inString = false, started = false;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const char c = d[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (started && depth == 0 && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      return {"data after the end of the trace", i};
    }
    if (c == '"')
      inString = true;
    else if (c == '{' || c == '[')
      ++depth, started = true;
    else if (c == '}' || c == ']')
      --depth;
    if (depth < 0) return {"unbalanced closing bracket", i};
  }
  if (inString) return {"truncated: the input ends inside a string", d.size()};
  if (depth > 0) return {"truncated: the input ends inside an object or array", d.size()};
  return {"malformed JSON structure"};
}

ParseFailure failure(simdjson::error_code err, std::string_view data, const char* what) {
  // The machine's memory, not the file: a failure of the run (exit 1), not a user error.
  if (err == simdjson::MEMALLOC) throw std::bad_alloc();
  if (err == simdjson::INCORRECT_TYPE) return {what};
  if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING ||
      err == simdjson::TAPE_ERROR) {
    return structureFailure(data);
  }
  return {std::string(what) + ": " + simdjson::error_message(err)};
}

constexpr std::size_t npos = static_cast<std::size_t>(-1);

// The text being imported, a window of it at a time. Offsets name bytes of the whole input; the
// window holds [base(), limit()), with headroom before it (where a run of events gets its '[' and
// the members after the events array their `{"traceEvents":[]`) and the parser's padding after.
class TextWindow {
 public:
  static constexpr std::size_t kHeadroom = 32;
  static constexpr std::size_t kTail = simdjson::SIMDJSON_PADDING + kHeadroom;

  TextWindow(ByteSource& source, std::size_t blockBytes)
      : source_(source), block_(std::max<std::size_t>(blockBytes, 1)) {}

  std::size_t base() const { return base_; }
  std::size_t limit() const { return base_ + size_; }
  bool eof() const { return eof_; }
  // The byte at `offset`, which lies in [base() - kHeadroom, limit() + kTail).
  char* at(std::size_t offset) { return buffer_.get() + kHeadroom + (offset - base_); }

  // Drops what comes before `keepFrom` (counting its lines) and reads on, no further than
  // `readTo`; the window grows when what is kept leaves less than half a block free.
  void more(std::size_t keepFrom, std::size_t readTo = npos) {
    if (eof_) return;
    const char* keep = buffer_ ? at(keepFrom) : nullptr;
    if (keepFrom > base_) {
      const char* from = at(base_);
      lines_ += static_cast<std::size_t>(std::count(from, keep, '\n'));
      if (const void* nl = ::memrchr(from, '\n', static_cast<std::size_t>(keep - from))) {
        lineStart_ = base_ + static_cast<std::size_t>(static_cast<const char*>(nl) - from) + 1;
      }
    }
    const std::size_t kept = limit() - keepFrom;
    std::size_t capacity = std::max(capacity_, kept + block_ / 2 + 1);
    if (capacity != capacity_) {
      // At least doubling: one long event read through a small window is copied a few times,
      // not once per block.
      capacity = std::max({capacity, kept + block_, 2 * capacity_});
      auto grown = std::make_unique_for_overwrite<char[]>(kHeadroom + capacity + kTail);
      if (kept) std::memcpy(grown.get() + kHeadroom, keep, kept);
      buffer_ = std::move(grown);
      capacity_ = capacity;
    } else if (kept) {
      std::memmove(buffer_.get() + kHeadroom, keep, kept);
    }
    base_ = keepFrom;
    size_ = kept;
    const std::size_t want = std::min(capacity_ - size_, readTo - limit());
    const std::size_t got = source_.read(at(limit()), want);
    size_ += got;
    eof_ = got < want;
    std::memset(at(limit()), 0, kTail);  // the parser's padding
  }

  // Line, column and byte of `offset` (at least base()).
  std::string describe(std::size_t offset) {
    offset = std::clamp(offset, base_, limit());
    std::size_t line = lines_, lineStart = lineStart_;
    const char* from = at(base_);
    for (std::size_t i = 0; i < offset - base_; ++i) {
      if (from[i] == '\n') {
        ++line;
        lineStart = base_ + i + 1;
      }
    }
    std::string s = "line " + std::to_string(line) + ", column " +
                    std::to_string(offset - lineStart + 1) + " (byte " + std::to_string(offset) +
                    ")";
    if (eof_ && offset == limit()) s += ", at the end of the input";
    return s;
  }

 private:
  ByteSource& source_;
  std::size_t block_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;  // bytes of text the buffer holds, headroom and tail aside
  std::size_t base_ = 0, size_ = 0;
  bool eof_ = false;
  std::size_t lines_ = 1, lineStart_ = 0;  // the line base() is on, and where that line starts
};

// Bytes of the window written over for a document's sake (the brackets around a run of events,
// `]}` after the members before the events array, `{"traceEvents":[]` before those after it),
// put back when the document is done with, or as a failure unwinds past it, so that its message
// counts the lines of the input and not of the patch.
class Patch {
 public:
  Patch(char* at, std::string_view bytes) : at_(at), size_(bytes.size()) {
    std::memcpy(saved_, at, size_);
    std::memcpy(at, bytes.data(), size_);
  }
  ~Patch() { std::memcpy(at_, saved_, size_); }
  Patch(const Patch&) = delete;
  Patch& operator=(const Patch&) = delete;

 private:
  char* at_;
  std::size_t size_;
  char saved_[32];
};

// The members of one event's args kept beyond its fields: enough for Kineto's shapes and
// launch parameters; past it members are counted, not kept.
constexpr std::size_t kMaxArgsBytes = 4096;

// Args as read: what ParaScope models, and the rest as JSON text.
struct Args {
  std::optional<std::int64_t> bytes, peer, group, step, microBatch, stage, instruction, stream;
  std::optional<std::int64_t> device;  // the GPU that ran our event (TraceData::gpuDevices)
  std::optional<std::uint64_t> correlation;
  bool flowSource = false, receive = false;
  std::string_view metaName;  // "name" of process_name / thread_name metadata
  std::optional<std::int64_t> totalAllocated, deviceType, deviceId;  // "[memory]" instants
  std::vector<std::pair<std::string_view, double>> numbers;          // for foreign "C" events
  KinetoCollective collective;                                       // record_param_comms
  // The args none of an Event's fields holds, as JSON object members (TraceData::args).
  std::string others;
  std::size_t othersClipped = 0;  // members left out of `others` for its size bound
};

struct RawEvent {
  char ph = 0;
  std::string_view name, cat, pid, tid;
  std::optional<std::int64_t> ts, dur;
  Args args;
};

// A JSON number as the grammar has it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool isJsonNumber(std::string_view t) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

void keepOther(std::string_view key, std::string_view value, Args& a) {
  if (a.others.size() + key.size() + value.size() + 8 > kMaxArgsBytes) {
    ++a.othersClipped;
    return;
  }
  if (!a.others.empty()) a.others.push_back(',');
  appendJsonString(a.others, key);
  a.others.push_back(':');
  a.others.append(value);
}

void parseStringArg(std::string_view k, std::string_view v, Args& a);

class Importer {
 public:
  template <class T>
  T take(simdjson::simdjson_result<T>&& r, const char* what) {
    T v{};  // NOLINT(bugprone-invalid-enum-default-initialization): get() sets it or fails
    if (auto err = std::move(r).get(v)) throw failure(err, docText_, what);
    return v;
  }

  // `sizeHint`: the input's size when known beforehand (0 if not), to size the event table.
  Importer(ByteSource& input, std::string source, const ImportOptions& options,
           std::size_t sizeHint)
      : source_(std::move(source)),
        options_(options),
        window_(input, options.windowBytes),
        sizeHint_(sizeHint) {}

  TraceData run();

 private:
  [[noreturn]] void fail(const ParseFailure& f);
  [[noreturn]] void failAt(const std::string& what, std::size_t offset);
  void parseInput();
  std::size_t skipSpace(std::size_t offset);
  std::size_t findEventsArray(std::size_t open);
  std::size_t streamEvents(std::size_t open);
  std::size_t eventStart(std::size_t from, bool first);
  void parseRun(std::size_t start, std::size_t end);
  void readToEnd(std::size_t keepFrom, const char* what);
  void iterate(char* text, std::size_t size, std::size_t offset, std::size_t realStart);
  void reserveEvent();
  void parseRoot();
  void parseEvents(od::array events);
  void parseEvent(od::object obj);
  void parseArgs(od::object obj, Args& args, bool collectNumbers);
  void parseForeignNumber(std::string_view k, od::value v, Args& a, bool collectNumbers);
  bool appendValue(od::value v, std::string& out, int depth);
  std::int64_t integer(od::value v, const char* what);
  std::string_view fieldKey(od::field& field);
  std::uint32_t key(std::string_view raw);
  void addEvent(RawEvent& r);
  void addCounters(RawEvent& r, const ForeignMapping& m);
  const char* internName(std::string_view name) {
    return name.size() <= kMaxNameBytes ? out_.strings.intern(name)
                                        : out_.strings.intern(clipName(name));
  }
  void resolve();
  std::string threadLabel(std::uint32_t pid, std::uint32_t tid) const;
  void addCollectiveTraffic();

  std::string source_;
  ImportOptions options_;
  TextWindow window_;
  std::size_t sizeHint_;
  od::parser parser_;
  od::document doc_;
  // The document the parser holds (a run of events, or the members before or after them), the
  // input offset its first byte stands for, and where its text from the input begins (before
  // that lies what was written in front of it).
  std::string_view docText_;
  std::size_t docOffset_ = 0, docInputFrom_ = 0;
  TraceData out_;
  bool docReady_ = false;  // doc_ may be asked for its position only after iterate() succeeded
  bool ours_ = false;
  std::int32_t infoRank_ = -1;
  std::size_t eventIndex_ = 0;
  // Raw pid/tid of each event, resolved to rank and lane at the end; the texts owned here (the
  // input they came from is gone by then), at stable addresses.
  std::unordered_map<std::string_view, std::uint32_t> keyIndex_;
  std::deque<std::string> keyText_;
  std::pair<std::string_view, std::uint32_t> recentKeys_[2] = {{"\x01", 0}, {"\x01", 0}};
  int recentNext_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> eventKeys_;
  std::vector<bool> laneFixed_;
  std::vector<std::pair<std::size_t, KinetoCollective>> collectives_;  // event index, args
  std::map<std::uint32_t, std::string> processNames_;
  std::map<std::uint32_t, std::int32_t> processDevices_;  // ours: pid -> its GPU events' device
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> threadNames_;
};

void Importer::fail(const ParseFailure& f) {
  std::size_t offset = docOffset_ + (f.offset != SIZE_MAX ? f.offset : docText_.size());
  const char* loc = nullptr;
  if (f.offset == SIZE_MAX && docReady_ && doc_.current_location().get(loc) == simdjson::SUCCESS &&
      loc) {
    offset = docOffset_ + static_cast<std::size_t>(loc - docText_.data());
  }
  failAt(f.what, std::max(offset, docInputFrom_));
}

void Importer::failAt(const std::string& what, std::size_t offset) {
  throw UserError(source_ + ": " + what + " at " + window_.describe(offset));
}

TraceData Importer::run() {
  // Typical events take 100-300 bytes of JSON; reserving avoids re-copying a growing vector.
  const std::size_t guess = std::min(options_.maxEvents, sizeHint_ / 128);
  out_.events.reserve(guess);
  eventKeys_.reserve(guess);
  laneFixed_.reserve(guess);
  try {
    parseInput();
  } catch (const ParseFailure& f) {
    fail(f);
  }
  resolve();
  return std::move(out_);
}

// The root: an array of events (torch 1.13), or an object whose "traceEvents" array is streamed
// between the members before it and those after it, each parsed as a document of its own.
void Importer::parseInput() {
  window_.more(0);
  std::size_t root = skipSpace(0);
  while (root == window_.limit() && !window_.eof()) {
    window_.more(root);
    root = skipSpace(root);
  }
  if (root == window_.limit()) failAt("not JSON: the input holds no JSON value", root);
  const char c = *window_.at(root);
  if (c == '[') {
    std::size_t end = streamEvents(root);
    for (;;) {
      end = skipSpace(end);
      if (end < window_.limit()) failAt("data after the end of the trace", end);
      if (window_.eof()) return;
      window_.more(end);
    }
  }
  if (c != '{') failAt("expected a JSON object with \"traceEvents\" or an array of events", root);
  const std::size_t events = findEventsArray(root);
  if (events == npos) {
    // No events array to stream: the whole input is one document, as the members around one.
    readToEnd(root, "without a \"traceEvents\" array");
    iterate(window_.at(root), window_.limit() - root, root, root);
    parseRoot();
    return;
  }
  // The members before the events array, closed after an empty one: `...,"traceEvents":[]}`.
  {
    const Patch close(window_.at(events + 1), "]}");
    iterate(window_.at(root), events + 3 - root, root, root);
    parseRoot();
  }
  const std::size_t after = streamEvents(events);
  // The members after it, opened with an empty one: `{"traceEvents":[]` and the rest.
  readToEnd(after, "after the \"traceEvents\" array");
  static constexpr std::string_view kOpen = R"({"traceEvents":[])";
  char* text = window_.at(after) - kOpen.size();
  const Patch open(text, kOpen);
  iterate(text, kOpen.size() + (window_.limit() - after), after - kOpen.size(), after);
  parseRoot();
}

std::size_t Importer::skipSpace(std::size_t offset) {
  while (offset < window_.limit()) {
    const char c = *window_.at(offset);
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
    ++offset;
  }
  return offset;
}

// Reads the rest of the input into the window, from `keepFrom` on, refusing more than an
// event's bound (what the members around the events array may take).
void Importer::readToEnd(std::size_t keepFrom, const char* what) {
  while (!window_.eof()) {
    if (window_.limit() - keepFrom > kMaxEventBytes) {
      failAt("more than " + std::to_string(kMaxEventBytes) + " bytes of JSON " + what, keepFrom);
    }
    window_.more(keepFrom);
  }
  if (window_.limit() - keepFrom > kMaxEventBytes) {
    failAt("more than " + std::to_string(kMaxEventBytes) + " bytes of JSON " + what, keepFrom);
  }
}

// The '[' of the root object's "traceEvents" member, or npos when the root (or the input) ends
// without one. A scalar scan: the members before the events are a few hundred bytes, and all of
// them stay in the window for their own parse.
std::size_t Importer::findEventsArray(std::size_t open) {
  auto byte = [&](std::size_t offset) -> int {
    // Judged at the byte asked for, not at how much a window holds: the same for any window.
    if (offset - open > kMaxEventBytes) {
      failAt("more than " + std::to_string(kMaxEventBytes) +
                 " bytes of JSON before the \"traceEvents\" array",
             open);
    }
    while (offset >= window_.limit()) {
      if (window_.eof()) return -1;
      window_.more(open);
    }
    return static_cast<unsigned char>(*window_.at(offset));
  };
  auto space = [](int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  static constexpr std::string_view kKey = "traceEvents";
  int depth = 1;
  for (std::size_t p = open + 1;;) {
    const int c = byte(p);
    if (c < 0) return npos;
    if (c == '"') {
      std::size_t q = p + 1;
      for (int d = byte(q); d != '"'; d = byte(q)) {
        if (d < 0) return npos;
        q += d == '\\' ? 2 : 1;
      }
      const bool named = depth == 1 && q - p - 1 == kKey.size() &&
                         std::string_view(window_.at(p + 1), kKey.size()) == kKey;
      p = q + 1;
      if (!named) continue;
      while (space(byte(p))) ++p;
      if (byte(p) != ':') continue;
      ++p;
      while (space(byte(p))) ++p;
      if (byte(p) == '[') return p;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if ((c == '}' || c == ']') && --depth == 0) return npos;
    ++p;
  }
}

// Streams the array opened at `open`: the splitter finds where whole events end in the window,
// each run of them is parsed, and the window moves on. Returns the offset just past the array.
std::size_t Importer::streamEvents(std::size_t open) {
  ArraySplitter splitter;
  std::size_t scanned = open + 1;  // where the splitter goes on
  std::size_t next = open + 1;     // the end of the last event parsed (or the '[')
  bool first = true;
  for (;;) {
    const ArraySplitter::Found f =
        splitter.scan(window_.at(scanned), window_.limit() - scanned, window_.eof());
    // The events before a place the splitter stopped at are parsed first: whatever the window,
    // the first fault in the input is the one reported.
    if (f.lastEnd != ArraySplitter::npos && scanned + f.lastEnd > next) {
      parseRun(eventStart(next, first), scanned + f.lastEnd);
      first = false;
      next = scanned + f.lastEnd;
    }
    if (f.tooDeep != ArraySplitter::npos) {
      eventStart(next, first);  // an event that is no object at all is refused as that
      failAt("nested more than " + std::to_string(kMaxJsonDepth) + " levels deep",
             scanned + f.tooDeep);
    }
    if (f.arrayEnd != ArraySplitter::npos) {
      const std::size_t end = scanned + f.arrayEnd;
      // Only space between the last event and ']': otherwise say what stands there.
      if (skipSpace(next) != end) eventStart(next, first);
      return end + 1;
    }
    scanned += f.scanned;
    if (window_.eof()) {
      failAt(splitter.inString() ? "truncated: the input ends inside a string"
                                 : "truncated: the input ends inside an object or array",
             window_.limit());
    }
    // The window never reads past kMaxEventBytes from the end of the last event: no event
    // longer than that ends in it.
    if (window_.limit() - next >= kMaxEventBytes) {
      failAt("an event of more than " + std::to_string(kMaxEventBytes) +
                 " bytes, the import limit for one event",
             eventStart(next, first));
    }
    window_.more(std::min(next, scanned), next + kMaxEventBytes);
  }
}

// Where the event after `from` starts: past space and, unless it is the first, the comma before
// it. It must be an object.
std::size_t Importer::eventStart(std::size_t from, bool first) {
  std::size_t p = skipSpace(from);
  if (!first) {
    if (p == window_.limit() || *window_.at(p) != ',') {
      failAt("expected ',' or ']' after an event", p);
    }
    p = skipSpace(p + 1);
  }
  if (p == window_.limit() || *window_.at(p) != '{') {
    failAt(p < window_.limit() && *window_.at(p) == ']' && !first
               ? "expected an event after ','"
               : "each trace event must be a JSON object",
           p);
  }
  return p;
}

// Parses the events in [start, end) (whole events and what separates them) as one array, its
// brackets written over the byte before and the byte after.
void Importer::parseRun(std::size_t start, std::size_t end) {
  char* open = window_.at(start) - 1;
  char* close = window_.at(end);
  const Patch before(open, "[");
  const Patch after(close, "]");
  iterate(open, static_cast<std::size_t>(close + 1 - open), start - 1, start);
  parseEvents(take(doc_.get_array(), "expected an array of events"));
}

void Importer::iterate(char* text, std::size_t size, std::size_t offset, std::size_t inputFrom) {
  docText_ = std::string_view(text, size);
  docOffset_ = offset;
  docInputFrom_ = inputFrom;
  docReady_ = false;
  const simdjson::padded_string_view view(text, size, size + simdjson::SIMDJSON_PADDING);
  // simdjson validates UTF-8 while indexing the document; only a failure needs the scalar pass
  // that finds where.
  if (auto err = parser_.iterate(view).get(doc_)) {
    // Thrown, not reported here: the patches go back before the message counts lines.
    if (!simdjson::validate_utf8(text, size)) {
      throw ParseFailure{"invalid UTF-8", firstInvalidUtf8(docText_)};
    }
    throw failure(err, docText_, "not JSON");
  }
  docReady_ = true;
}

void Importer::parseRoot() {
  od::json_type type = take(doc_.type(), "not JSON");
  if (type == od::json_type::array) {
    parseEvents(take(doc_.get_array(), "expected an array of events"));
    return;
  }
  if (type != od::json_type::object) {
    throw ParseFailure{"expected a JSON object with \"traceEvents\" or an array of events"};
  }
  bool sawEvents = false;
  for (auto f : take(doc_.get_object(), "expected an object")) {
    od::field field = take(std::move(f), "malformed member");
    std::string_view k = take(field.unescaped_key(), "malformed key");
    od::value v = field.value();
    if (k == "traceEvents") {
      parseEvents(take(v.get_array(), "\"traceEvents\" must be an array"));
      sawEvents = true;
    } else if (k == "parascopeVersion") {
      ours_ = true;
    } else if (k == "clockResidualNs") {
      out_.clockResidualNs = integer(v, "clockResidualNs");
    } else if (k == "parascopeConfig") {
      od::object config = take(v.get_object(), "\"parascopeConfig\" must be an object");
      out_.runConfig = std::string(take(config.raw_json(), "malformed \"parascopeConfig\""));
    } else if (k == "distributedInfo") {
      for (auto df : take(v.get_object(), "\"distributedInfo\" must be an object")) {
        od::field d = take(std::move(df), "malformed member");
        std::string_view dk = take(d.unescaped_key(), "malformed key");
        // Ranks are int32 everywhere downstream: a larger value is refused, never truncated.
        auto rankField = [&](const char* name, std::int64_t min) {
          const std::int64_t x = integer(d.value(), name);
          if (x < min || x > INT32_MAX) {
            throw ParseFailure{"distributedInfo." + std::string(name) + " = " + std::to_string(x) +
                               " is out of range; allowed " + std::to_string(min) + ".." +
                               std::to_string(INT32_MAX)};
          }
          return static_cast<std::int32_t>(x);
        };
        if (dk == "rank") infoRank_ = rankField("rank", 0);
        if (dk == "world_size") out_.worldSize = rankField("world_size", 0);
      }
    }
  }
  const char* rest = nullptr;
  if (doc_.current_location().get(rest) == simdjson::SUCCESS) throw structureFailure(docText_);
  if (!sawEvents) throw ParseFailure{"no \"traceEvents\" array in the trace object"};
}

std::int64_t Importer::integer(od::value v, const char* what) {
  std::int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::fabs(d) < 9.2e18 && d == std::floor(d)) {
    return static_cast<std::int64_t>(d);
  }
  throw ParseFailure{std::string("\"") + what + "\" must be an integer"};
}

// A member's key straight from the input when it has no escapes (nearly always), skipping
// simdjson's unescaping copy, which took a tenth of an import. Stage 1 has checked that every
// string closes, so the scan ends at the closing quote.
std::string_view Importer::fieldKey(od::field& field) {
  const char* begin = field.key().raw();
  for (const char* p = begin;; ++p) {
    if (*p == '"') return {begin, static_cast<std::size_t>(p - begin)};
    if (*p == '\\') return take(field.unescaped_key(), "malformed key");
  }
}

std::uint32_t Importer::key(std::string_view raw) {
  raw = trim(raw);
  // Consecutive events mostly share their pid and tid: skip the hash for a repeat.
  for (const auto& [text, index] : recentKeys_) {
    if (text == raw) return index;
  }
  auto it = keyIndex_.find(raw);
  if (it == keyIndex_.end()) {
    const auto index = static_cast<std::uint32_t>(keyText_.size());
    it = keyIndex_.emplace(keyText_.emplace_back(raw), index).first;
  }
  recentKeys_[recentNext_] = {it->first, it->second};
  recentNext_ ^= 1;
  return it->second;
}

void Importer::parseEvents(od::array events) {
  for (auto element : events) {
    if ((eventIndex_ & 0xFFFF) == 0 && options_.cancel &&
        options_.cancel->load(std::memory_order_relaxed))
      throw ImportCancelled();
    od::value v = take(std::move(element), "malformed event");
    parseEvent(take(v.get_object(), "each trace event must be a JSON object"));
    ++eventIndex_;
  }
}

void Importer::parseEvent(od::object obj) {
  RawEvent r;
  for (auto f : obj) {
    od::field field = take(std::move(f), "malformed event member");
    std::string_view k = fieldKey(field);
    od::value v = field.value();
    if (k == "ph") {
      std::string_view ph = take(v.get_string(), "\"ph\" must be a string");
      r.ph = ph.empty() ? '?' : ph[0];
    } else if (k == "name") {
      r.name = take(v.get_string(), "\"name\" must be a string");
    } else if (k == "cat") {
      r.cat = take(v.get_string(), "\"cat\" must be a string");
    } else if (k == "pid" || k == "tid") {
      const od::json_type t = take(v.type(), "bad id");
      if (t != od::json_type::number && t != od::json_type::string) {
        throw ParseFailure{"\"pid\" and \"tid\" must be numbers or strings"};
      }
      (k == "pid" ? r.pid : r.tid) = v.raw_json_token();
    } else if (k == "ts" || k == "dur") {
      std::int64_t ns = 0;
      std::string_view tok = v.raw_json_token();
      if (take(v.type(), "bad time") != od::json_type::number || !microsToNs(tok, &ns)) {
        throw ParseFailure{"\"" + std::string(k) + "\" must be a number of microseconds within " +
                           "+-9e15, not " + std::string(trim(tok).substr(0, 40))};
      }
      (k == "ts" ? r.ts : r.dur) = ns;
    } else if (k == "args" || k == "tags") {
      if (take(v.type(), "bad args") == od::json_type::object) {
        parseArgs(take(v.get_object(), "bad args"), r.args, k == "args");
      }
    }
  }
  addEvent(r);
}

// `collectNumbers`: the event's "args" (not our counters' "tags"), whose numbers a foreign
// counter plots and whose members no Event field holds are kept (Args::others).
void Importer::parseArgs(od::object obj, Args& a, bool collectNumbers) {
  for (auto f : obj) {
    od::field field = take(std::move(f), "malformed args member");
    std::string_view k = fieldKey(field);
    od::value v = field.value();
    const od::json_type t = take(v.type(), "bad value");
    if (t == od::json_type::string) {
      const std::string_view text = take(v.get_string(), "bad string");
      parseStringArg(k, text, a);
      if (collectNumbers && a.others.size() + k.size() + text.size() + 8 > kMaxArgsBytes) {
        ++a.othersClipped;  // too long escaped or not: counted without a copy
      } else if (collectNumbers) {
        std::string member;
        appendJsonString(member, text);
        keepOther(k, member, a);
      }
      continue;
    }
    if (t != od::json_type::number) {
      std::string member;
      if (collectNumbers && appendValue(v, member, 0)) keepOther(k, member, a);
      continue;
    }
    // The fields of ParaScope's own events; anything else is kept as well as read. Ours carry
    // the device and stream of GPU work for Kineto's readers; the lane already says the stream.
    if (ours_ && k == "device")
      a.device = integer(v, "device");
    else if (ours_ && k == "stream")
      continue;
    else if (k == "bytes")
      a.bytes = integer(v, "bytes");
    else if (k == "peer")
      a.peer = integer(v, "peer");
    else if (k == "group")
      a.group = integer(v, "group");
    else if (k == "step")
      a.step = integer(v, "step");
    else if (k == "micro_batch")
      a.microBatch = integer(v, "micro_batch");
    else if (k == "stage")
      a.stage = integer(v, "stage");
    else if (k == "instruction")
      a.instruction = integer(v, "instruction");
    else if (k == "correlation")
      a.correlation = take(v.get_uint64(), "\"correlation\" must be a non-negative integer");
    else if (k == "flow_source")
      a.flowSource = integer(v, "flow_source") != 0;
    else if (k == "receive")
      a.receive = integer(v, "receive") != 0;
    else
      parseForeignNumber(k, v, a, collectNumbers);
  }
}

// A number in a foreign event's args: what Kineto's keys mean to ParaScope, one series of a
// foreign counter, and (for "args") kept as written.
void Importer::parseForeignNumber(std::string_view k, od::value v, Args& a, bool collectNumbers) {
  const std::string_view token = trim(v.raw_json_token());
  if (k == "stream")
    a.stream = integer(v, "stream");
  else if (k == "Total Allocated")
    a.totalAllocated = integer(v, "Total Allocated");
  else if (k == "Device Type")
    a.deviceType = integer(v, "Device Type");
  else if (k == "Device Id")
    a.deviceId = integer(v, "Device Id");
  else if (k == "In msg nelems")
    a.collective.inElements = integer(v, "In msg nelems");
  else if (k == "Out msg nelems")
    a.collective.outElements = integer(v, "Out msg nelems");
  else if (k == "Group size")
    a.collective.groupSize = integer(v, "Group size");
  else if (k == "Global rank start")
    a.collective.rankStart = integer(v, "Global rank start");
  else if (k == "Global rank stride")
    a.collective.rankStride = integer(v, "Global rank stride");
  else if (k == "Process Group ID")
    a.collective.groupId = integer(v, "Process Group ID");
  else if (collectNumbers && a.numbers.size() < 64)
    a.numbers.emplace_back(k, take(v.get_double(), "bad number"));
  if (collectNumbers && isJsonNumber(token)) keepOther(k, token, a);
}

// Appends a JSON value rebuilt from the parse, so that the text is valid JSON whatever the
// input's unread parts held; false for a value nested deeper than 8 or longer than the bound.
bool Importer::appendValue(od::value v, std::string& out, int depth) {
  if (depth > 8 || out.size() > kMaxArgsBytes) return false;
  switch (take(v.type(), "bad value")) {
    case od::json_type::array: {
      out.push_back('[');
      bool first = true;
      for (auto element : take(v.get_array(), "bad array")) {
        if (!first) out.push_back(',');
        first = false;
        if (!appendValue(take(std::move(element), "bad array element"), out, depth + 1))
          return false;
      }
      out.push_back(']');
      return true;
    }
    case od::json_type::object: {
      out.push_back('{');
      bool first = true;
      for (auto f : take(v.get_object(), "bad object")) {
        od::field field = take(std::move(f), "bad object member");
        if (!first) out.push_back(',');
        first = false;
        appendJsonString(out, fieldKey(field));
        out.push_back(':');
        if (!appendValue(field.value(), out, depth + 1)) return false;
      }
      out.push_back('}');
      return true;
    }
    case od::json_type::number: {
      const std::string_view token = trim(v.raw_json_token());
      if (!isJsonNumber(token)) return false;
      out.append(token);
      return true;
    }
    case od::json_type::string:
      appendJsonString(out, take(v.get_string(), "bad string"));
      return true;
    case od::json_type::boolean:
      out.append(take(v.get_bool(), "bad boolean") ? "true" : "false");
      return true;
    case od::json_type::null: out.append("null"); return true;
  }
  return false;
}

void parseStringArg(std::string_view k, std::string_view v, Args& a) {
  if (k == "name")
    a.metaName = v;
  else if (k == "Collective name")
    a.collective.name = v;
  else if (k == "dtype")
    a.collective.dtype = v;
  else if (k == "Process Group Ranks")
    a.collective.groupRanks = v;
  else if (k == "In split size")
    a.collective.inSplits = v;
  else if (k == "Out split size")
    a.collective.outSplits = v;
}

std::int32_t toInt32(const std::optional<std::int64_t>& v, const char* what) {
  if (!v) return -1;
  if (*v < INT32_MIN || *v > INT32_MAX) {
    throw ParseFailure{std::string("\"") + what + "\" is out of range: " + std::to_string(*v)};
  }
  return static_cast<std::int32_t>(*v);
}

void Importer::addEvent(RawEvent& r) {
  if (r.ph == 'M') {
    const std::uint32_t pid = key(r.pid);
    if (r.name == "process_name") processNames_[pid] = clipName(r.args.metaName);
    if (r.name == "thread_name") threadNames_[{pid, key(r.tid)}] = clipName(r.args.metaName);
    return;
  }
  if (r.ph != 'X' && r.ph != 'i' && r.ph != 'I' && r.ph != 'C') return;  // flows, B/E, ...
  if (!r.ts) throw ParseFailure{"trace event without \"ts\""};
  if (out_.events.size() >= options_.maxEvents) {
    throw ParseFailure{"more than " + std::to_string(options_.maxEvents) +
                       " events, the import limit"};
  }
  ForeignMapping m;
  if (!ours_ || !trace::categoryFromName(r.cat, &m.category)) m = mapForeignEvent(r.cat, r.name);
  if (!ours_ && r.ph == 'i' && r.name == "[memory]") {
    addCounters(r, m);
    return;
  }
  if (r.ph == 'C' && !ours_) {
    addCounters(r, m);
    return;
  }
  Event e;
  e.name = internName(r.name);
  e.category = m.category;
  e.kind = r.ph == 'X' ? EventKind::Span : r.ph == 'C' ? EventKind::Counter : EventKind::Instant;
  e.startNs = *r.ts;
  const std::int64_t dur = r.ph == 'X' ? r.dur.value_or(0) : 0;
  if (dur < 0 || e.startNs > INT64_MAX - dur) throw ParseFailure{"bad \"dur\""};
  e.endNs = e.startNs + dur;
  const Args& a = r.args;
  e.bytes = a.bytes.value_or(0);
  e.peer = toInt32(a.peer, "peer");
  e.group = toInt32(a.group, "group");
  e.step = a.step ? toInt32(a.step, "step") : m.step;
  e.microBatch = toInt32(a.microBatch, "micro_batch");
  e.stage = toInt32(a.stage, "stage");
  e.instruction = toInt32(a.instruction, "instruction");
  if (ours_ && a.device) processDevices_[key(r.pid)] = toInt32(a.device, "device");
  e.correlation = a.correlation.value_or(0);
  // Ours say which events start flows; a foreign launch does by its category.
  if (a.flowSource || (!ours_ && m.flowSource && e.correlation != 0))
    e.flags |= trace::flag::kFlowSource;
  if (a.receive) e.flags |= trace::flag::kReceive;
  const bool gpuLane = !ours_ && m.gpu && a.stream;
  if (gpuLane) e.lane = trace::lane::gpuStream(static_cast<std::uint32_t>(*a.stream));
  if (!ours_ && e.kind == EventKind::Span && r.name == "record_param_comms" &&
      !a.collective.name.empty()) {
    e.name = internName("record_param_comms:" + std::string(a.collective.name));
    e.category = Category::Communication;
    if (a.collective.groupId >= 0) e.group = toInt32(a.collective.groupId, "Process Group ID");
    collectives_.emplace_back(out_.events.size(), a.collective);
  }
  if (a.othersClipped) {
    std::string others = a.others;
    if (!others.empty()) others.push_back(',');
    others += "\"(args left out, over 4 KiB)\":" + std::to_string(a.othersClipped);
    e.args = out_.addArgs(others);
  } else {
    e.args = out_.addArgs(a.others);
  }
  reserveEvent();
  out_.events.push_back(e);
  eventKeys_.emplace_back(key(r.pid), key(r.tid));
  laneFixed_.push_back(gpuLane);
}

// The event table is most of what an import holds, and growing it needs the new table beside the
// old: a trace whose events outgrow the memory available is refused, naming how far it got.
void Importer::reserveEvent() {
  if (out_.events.size() < out_.events.capacity()) return;
  const std::size_t grown = std::max<std::size_t>(4096, out_.events.capacity() * 2);
  const double bytes =
      static_cast<double>(grown) * (sizeof(Event) + sizeof(eventKeys_[0]) + 1.0 / 8);
  const double available = availableMemoryBytes();
  if (available >= 0 && bytes > available) {
    throw UserError(
        source_ + ": more events than fit in memory: " + std::to_string(out_.events.size()) +
        " read, and a table for " + std::to_string(grown) + " needs " + formatBytes(bytes) +
        ", more than the " + formatBytes(available) + " available");
  }
  out_.events.reserve(grown);
  if (eventKeys_.capacity() < grown) eventKeys_.reserve(grown);
  if (laneFixed_.capacity() < grown) laneFixed_.reserve(grown);
}

// Foreign counters: each numeric series of a "C" event, or the allocator total of a PyTorch
// "[memory]" instant, becomes a counter event.
void Importer::addCounters(RawEvent& r, const ForeignMapping& m) {
  auto push = [&](std::string_view name, Category c, std::int64_t value) {
    if (out_.events.size() >= options_.maxEvents) {
      throw ParseFailure{"more than " + std::to_string(options_.maxEvents) +
                         " events, the import limit"};
    }
    Event e;
    e.name = internName(name);
    e.category = c;
    e.kind = EventKind::Counter;
    e.startNs = e.endNs = *r.ts;
    e.bytes = value;
    reserveEvent();
    out_.events.push_back(e);
    eventKeys_.emplace_back(key(r.pid), key(r.tid));
    laneFixed_.push_back(false);
  };
  if (r.ph == 'i') {
    if (!r.args.totalAllocated) return;
    const bool cuda = r.args.deviceType.value_or(0) == 1;
    const std::string name =
        cuda ? "cuda:" + std::to_string(r.args.deviceId.value_or(0)) + " allocated"
             : "cpu allocated";
    push(name, Category::Memory, *r.args.totalAllocated);
    return;
  }
  for (const auto& [k, v] : r.args.numbers) {
    const std::string name = r.args.numbers.size() == 1
                                 ? std::string(r.name)
                                 : std::string(r.name) + "/" + std::string(k);
    if (!(std::fabs(v) < 9.2e18)) throw ParseFailure{"counter value out of range"};
    push(name, m.category == Category::Memory ? Category::Memory : Category::Host,
         static_cast<std::int64_t>(std::llround(v)));
  }
}

// An unnamed thread of a foreign file as Perfetto labels it: its process's name (else the pid)
// and the thread's id, ids as written without a string's quotes (Kineto's pid "Spans" holds its
// step spans): "Spans / PyTorch Profiler", "process 0 / thread 7".
std::string Importer::threadLabel(std::uint32_t pid, std::uint32_t tid) const {
  auto text = [](std::string_view raw) {
    const bool quoted = raw.size() >= 2 && raw.front() == '"' && raw.back() == '"';
    return std::pair(std::string(quoted ? raw.substr(1, raw.size() - 2) : raw), !quoted);
  };
  const auto [pidText, pidNumber] = text(keyText_[pid]);
  const auto [tidText, tidNumber] = text(keyText_[tid]);
  const auto named = processNames_.find(pid);
  const std::string process = named != processNames_.end() && !named->second.empty() ? named->second
                              : pidNumber ? "process " + pidText
                                          : pidText;
  return clipName(process + " / " + (tidNumber ? "thread " + tidText : tidText));
}

// Ranks and lanes: our files say pid = rank, tid = lane; foreign files have one rank
// (distributedInfo) whose host threads become lanes in order of first appearance.
void Importer::resolve() {
  const std::int32_t rank = infoRank_ >= 0 ? infoRank_ : options_.defaultRank;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::int32_t> threadLanes;
  std::vector<std::optional<std::int32_t>> ids(keyText_.size());  // parsed once per key
  auto parseId = [&](std::uint32_t k, const char* what) -> std::int32_t {
    if (ids[k]) return *ids[k];
    std::string_view t = keyText_[k];
    std::int32_t v = 0;
    auto res = std::from_chars(t.data(), t.data() + t.size(), v);
    if (res.ec != std::errc() || res.ptr != t.data() + t.size()) {
      throw UserError(source_ + ": " + what + " " + std::string(t.substr(0, 40)) +
                      " is not an integer, as ParaScope traces require");
    }
    ids[k] = v;
    return v;
  };
  for (std::size_t i = 0; i < out_.events.size(); ++i) {
    Event& e = out_.events[i];
    const auto [pid, tid] = eventKeys_[i];
    if (ours_) {
      e.rank = parseId(pid, "pid");
      e.lane = parseId(tid, "tid");
      continue;
    }
    e.rank = rank;
    if (laneFixed_[i]) continue;
    auto [it, inserted] = threadLanes.try_emplace(
        {pid, tid}, trace::lane::kFirstThread + static_cast<std::int32_t>(threadLanes.size()));
    e.lane = it->second;
    if (inserted) {
      auto named = threadNames_.find({pid, tid});
      out_.laneNames[{rank, e.lane}] = named != threadNames_.end() && !named->second.empty()
                                           ? named->second
                                           : threadLabel(pid, tid);
    }
  }
  for (const auto& [pid, name] : processNames_) {
    if (ours_) {
      out_.rankNames[parseId(pid, "pid")] = name;
    } else if (!out_.rankNames.count(rank) && !name.empty()) {
      out_.rankNames[rank] = name;
    }
  }
  if (ours_) {
    for (const auto& [pid, device] : processDevices_) out_.gpuDevices[parseId(pid, "pid")] = device;
    for (const auto& [k, name] : threadNames_) {
      out_.laneNames[{parseId(k.first, "pid"), parseId(k.second, "tid")}] = name;
    }
  }
  addCollectiveTraffic();
  out_.sortByTime();
  if (!ours_) tagStepsFromSpans(out_);
  eventKeys_.clear();
}

// Once the rank is known: each collective's span carries the bytes this rank sends, and one
// instant per peer carries what goes to it, as the engine records its own collectives.
void Importer::addCollectiveTraffic() {
  for (const auto& [at, collective] : collectives_) {
    const CollectiveTraffic traffic = collectiveTraffic(collective, out_.events[at].rank);
    out_.events[at].bytes = traffic.sentBytes;
    for (const PeerBytes& p : traffic.peers) {
      if (out_.events.size() >= options_.maxEvents) break;
      Event peer = out_.events[at];
      peer.kind = EventKind::Instant;
      peer.startNs = peer.endNs;
      peer.peer = p.peer;
      peer.bytes = p.bytes;
      reserveEvent();
      out_.events.push_back(peer);
    }
  }
  collectives_.clear();
}

}  // namespace

TraceData importChromeTrace(const std::string& path, const ImportOptions& options) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (the workbench's --open waited
  // forever); anything but a regular file is refused before a byte is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UserError("cannot open trace file '" + path + "': " + std::strerror(errno));
  const struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw UserError("trace file '" + path + "': " +
                    (S_ISDIR(st.st_mode) ? "is a directory" : "is a device, FIFO or socket") +
                    ", not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > options.maxBytes) {
    throw UserError("trace file '" + path + "' has " + std::to_string(size) +
                    " bytes, more than the import limit of " + std::to_string(options.maxBytes));
  }
  const std::string what = "trace file '" + path + "'";
  FileSource file(fd, what, options.maxBytes);
  // Gzip by its magic; its trailer (the inflated size) read before anything is inflated.
  char head[2] = {};
  char tail[4] = {};
  const bool gzip = ::pread(fd, head, 2, 0) == 2 && isGzip(std::string_view(head, 2));
  if (!gzip) {
    checkImportMemory(what, size, availableMemoryBytes());
    return Importer(file, path, options, size).run();
  }
  std::optional<std::size_t> stated;
  if (size >= 18 && ::pread(fd, tail, 4, static_cast<off_t>(size - 4)) == 4) {
    stated = gzipTrailerSize(tail);
  }
  GunzipSource inflated(file, stated, options.maxBytes, what);
  checkImportMemory(what, stated.value_or(options.maxBytes), availableMemoryBytes());
  return Importer(inflated, path, options, stated.value_or(size)).run();
}

TraceData importChromeTraceFromMemory(std::string_view data, const std::string& source,
                                      const ImportOptions& options) {
  if (data.size() > options.maxBytes) {
    throw UserError(source + ": " + std::to_string(data.size()) +
                    " bytes is more than the import limit of " + std::to_string(options.maxBytes));
  }
  MemorySource bytes(data);
  if (!isGzip(data)) {
    checkImportMemory(source, data.size(), availableMemoryBytes());
    return Importer(bytes, source, options, data.size()).run();
  }
  const std::optional<std::size_t> stated = gzipStatedSize(data);
  GunzipSource inflated(bytes, stated, options.maxBytes, source);
  checkImportMemory(source, stated.value_or(options.maxBytes), availableMemoryBytes());
  return Importer(inflated, source, options, stated.value_or(data.size())).run();
}

TraceData importChromeTraces(const std::vector<std::string>& paths, const ImportOptions& options) {
  TraceData all;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw ImportCancelled();
    ImportOptions o = options;
    if (paths.size() > 1) o.defaultRank = static_cast<std::int32_t>(i);
    all.merge(importChromeTrace(paths[i], o));
  }
  all.sortByTime();
  all.worldSize = std::max(all.worldSize, static_cast<int>(all.ranks().size()));
  return all;
}

void checkImportMemory(const std::string& what, std::size_t jsonBytes, double availableBytes,
                       std::size_t windowBytes) {
  // The window: its text, simdjson's index (4 bytes per byte) and string buffer (5/3 per byte).
  const double window = 7.0 * static_cast<double>(std::min(jsonBytes, windowBytes));
  // The events: 88 bytes each (the event, its pid/tid keys) at one per 128 bytes of JSON, the
  // density of ParaScope's own traces (Kineto's events are longer).
  const double events = 88.0 / 128.0 * static_cast<double>(jsonBytes);
  const double needed = window + events;
  if (availableBytes < 0 || needed <= availableBytes) return;
  throw UserError(what + ": importing its " + std::to_string(jsonBytes) +
                  " bytes of JSON needs about " + formatBytes(needed) + " of memory (" +
                  formatBytes(events) + " for its events, " + formatBytes(window) +
                  " for the text parsed at a time), more than the " + formatBytes(availableBytes) +
                  " available");
}

std::string clipName(std::string_view name) {
  if (name.size() <= kMaxNameBytes) return std::string(name);
  std::size_t keep = kMaxNameBytes;
  // Back to the start of a character: a cut through one would leave invalid UTF-8, which the
  // exporter's JSON writer refuses.
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  return std::string(name.substr(0, keep)) + "... [clipped from " + std::to_string(name.size()) +
         " bytes]";
}

}  // namespace parascope::profiler
