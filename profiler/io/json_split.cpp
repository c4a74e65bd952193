// The splitter's blocks, as simdjson's stage 1 finds strings: per 64 bytes, bit masks of the
// quotes, backslashes and brackets; escaped characters from the runs of backslashes; the bytes
// inside strings as the prefix XOR of the unescaped quotes, carried from block to block. Only
// the brackets outside strings are then visited one by one: a few per trace event.
#include "profiler/io/json_split.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace parascope::profiler {

namespace {

struct Masks {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};

Masks classify(const char* p) {
  Masks m;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i fold = _mm_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i folded = _mm_or_si128(v, fold);
    auto bits = [i](__m128i eq) {
      return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(eq)))
             << (16 * i);
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_cmpeq_epi8(folded, open));
    m.close |= bits(_mm_cmpeq_epi8(folded, close));
  }
#else
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    switch (p[i]) {
      case '"': m.quote |= bit; break;
      case '\\': m.backslash |= bit; break;
      case '{':
      case '[': m.open |= bit; break;
      case '}':
      case ']': m.close |= bit; break;
      default: break;
    }
  }
#endif
  return m;
}

// The characters a backslash escapes: each one after an unescaped backslash. `carry`: the first
// byte is escaped (the last block ended with one); set when this block does.
std::uint64_t escapedChars(std::uint64_t backslash, bool& carry) {
  if (!backslash && !carry) return 0;
  std::uint64_t escaped = 0;
  if (carry) {
    escaped = 1;
    backslash &= ~std::uint64_t{1};
  }
  carry = false;
  while (backslash) {
    const int i = __builtin_ctzll(backslash);
    if (i == 63) {
      carry = true;
      break;
    }
    escaped |= std::uint64_t{2} << i;
    backslash &= ~(std::uint64_t{3} << i);
  }
  return escaped;
}

// Bit i is the XOR of bits 0..i: 1 from an opening quote up to (not including) its closing one.
std::uint64_t prefixXor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

ArraySplitter::Found ArraySplitter::scan(const char* text, std::size_t size, bool final) {
  Found found;
  for (std::size_t at = 0; at < size; at += 64) {
    const std::size_t valid = size - at < 64 ? size - at : 64;
    Masks m = classify(text + at);
    if (valid < 64) {
      const std::uint64_t live = (std::uint64_t{1} << valid) - 1;
      m.quote &= live;
      m.backslash &= live;
      m.open &= live;
      m.close &= live;
    }
    bool escaped = escaped_;
    const std::uint64_t quotes = m.quote & ~escapedChars(m.backslash, escaped);
    const std::uint64_t inString = prefixXor(quotes) ^ (inString_ ? ~std::uint64_t{0} : 0);
    const std::uint64_t open = m.open & ~inString;
    std::uint64_t brackets = (m.open | m.close) & ~inString;
    int depth = depth_;
    while (brackets) {
      const int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if ((open >> i) & 1) {
        if (++depth > kMaxJsonDepth) {
          found.tooDeep = at + static_cast<std::size_t>(i);
          return found;
        }
      } else if (--depth == 1) {
        found.lastEnd = at + static_cast<std::size_t>(i) + 1;
      } else if (depth == 0) {
        found.arrayEnd = at + static_cast<std::size_t>(i);
        return found;
      }
    }
    if (valid < 64 && !final) break;  // looked at, not taken: scanned again with more text
    depth_ = depth;
    escaped_ = escaped;
    inString_ = valid < 64 ? ((inString >> (valid - 1)) & 1) != 0 : (inString >> 63) != 0;
    found.scanned = at + valid;
  }
  return found;
}

}  // namespace parascope::profiler
