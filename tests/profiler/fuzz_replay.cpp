// Replays the importer's fuzz corpus through the libFuzzer entry point, then a fixed number of
// deterministic mutations of it (byte flips, JSON-token splices, cuts, duplications), so the
// ordinary test suite (and its ASan/UBSan build) exercises the fuzz target without clang.
//   fuzz_replay CORPUS_DIR ITERATIONS [MORE_CORPUS_DIRS...]
// Every fuzz target (trace importer, config, safetensors) links its own copy.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

struct Rng {
  std::uint64_t s = 0x9E3779B97F4A7C15ULL;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

const char* const kTokens[] = {"{",
                               "}",
                               "[",
                               "]",
                               ",",
                               ":",
                               "\"",
                               "\\",
                               "\\u0000",
                               "\\ud800",
                               "1e999",
                               "-0",
                               "0.0000001",
                               "18446744073709551616",
                               "null",
                               "true",
                               "\"ph\":\"X\"",
                               "\"ts\":",
                               "\"traceEvents\":[",
                               "\"parascopeVersion\":1,",
                               "\xff",
                               "\xc3",
                               "\x1f\x8b"};

void mutate(std::string& s, Rng& rng) {
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < n; ++i) {
    const std::size_t at = rng.below(s.size() + 1);
    switch (rng.below(5)) {
      case 0:
        if (!s.empty()) s[rng.below(s.size())] ^= static_cast<char>(1 << rng.below(8));
        break;
      case 1: s.insert(at, kTokens[rng.below(std::size(kTokens))]); break;
      case 2: s.erase(at, rng.below(16)); break;
      case 3: s.resize(at); break;
      default: s.insert(at, s.substr(rng.below(s.size() + 1), rng.below(64))); break;
    }
  }
}

void run(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_replay CORPUS_DIR ITERATIONS [MORE_CORPUS_DIRS...]\n");
    return 2;
  }
  std::vector<std::string> corpus;
  for (int a = 1; a < argc; ++a) {
    if (a == 2) continue;
    for (const auto& entry : std::filesystem::directory_iterator(argv[a])) {
      if (!entry.is_regular_file()) continue;  // e.g. tests/fixtures/kineto beside the seeds
      std::ifstream in(entry.path(), std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "fuzz_replay: no corpus files in %s\n", argv[1]);
    return 2;
  }
  for (const auto& s : corpus) run(s);
  const long iterations = std::strtol(argv[2], nullptr, 10);
  Rng rng;
  for (long i = 0; i < iterations; ++i) {
    std::string s = corpus[rng.below(corpus.size())];
    mutate(s, rng);
    run(s);
  }
  std::printf("fuzz_replay: %zu corpus inputs and %ld mutations, no failure\n", corpus.size(),
              iterations);
  return 0;
}
