// Where the elements of a JSON array end, found without parsing them: 64 bytes at a time, the
// strings (with their escapes) masked out and the brackets counted. An importer gives its parser
// whole elements a window of text at a time this way, and never holds the whole input. Nothing
// else is checked here: the parser checks every element it is given.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parascope::profiler {

// Deeper nesting is refused as soon as it is seen (simdjson's own default is 1024 levels; the
// importer's batches add one).
inline constexpr int kMaxJsonDepth = 1000;

class ArraySplitter {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Offsets from the `text` given to scan().
  struct Found {
    std::size_t scanned = 0;      // bytes taken for good: the next scan starts at text + scanned
    std::size_t lastEnd = npos;   // just past the last element (object or array) that closed
    std::size_t arrayEnd = npos;  // the closing bracket of the array itself
    std::size_t tooDeep = npos;   // the bracket that opened level kMaxJsonDepth + 1
  };

  // Scans `size` bytes from `text`, which continues where the last scan's `scanned` ended (the
  // first scan starts just after the array's opening bracket). Whole blocks of 64 bytes are
  // taken for good; a shorter rest is looked at for element ends but scanned again by the next
  // call, unless `final` (no more text will come). 64 bytes past text + size must be readable.
  // Stops at the array's end or at a nesting too deep.
  Found scan(const char* text, std::size_t size, bool final);

  // After a final scan that found no array end: whether the text ended inside a string.
  bool inString() const { return inString_; }

 private:
  int depth_ = 1;          // 1: between the array's elements
  bool inString_ = false;  // the last byte taken was inside a string
  bool escaped_ = false;   // the first byte of the next block is escaped by a backslash
};

}  // namespace parascope::profiler
