#include "core/ps/word2vec_corpus.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"
#include "core/common/random.h"
#include "core/data/text_dataset.h"

namespace parascope::ps {

namespace {

constexpr std::size_t kBlockWords = 16384;

bool wordByte(std::uint8_t b) {
  return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '\'';
}

// Calls fn(word) for each word of the text, lower-cased, apostrophes at either end trimmed.
template <class F>
void forEachWord(const std::vector<std::uint8_t>& text, F fn) {
  std::string w;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && wordByte(text[i])) {
      const auto b = text[i];
      w.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b));
      continue;
    }
    const std::size_t first = w.find_first_not_of('\'');
    if (first != std::string::npos) {
      const std::size_t last = w.find_last_not_of('\'');
      fn(std::string_view(w).substr(first, last - first + 1));
    }
    w.clear();
  }
}

}  // namespace

std::int64_t pairRow(const Word2VecSpec& m, std::int32_t previous, std::int32_t word) {
  std::uint64_t s =
      mixSeed(static_cast<std::uint64_t>(previous) + 1, static_cast<std::uint64_t>(word));
  return m.vocabSize +
         static_cast<std::int64_t>(splitMix64(s) % static_cast<std::uint64_t>(m.pairRows));
}

Word2VecCorpus::Word2VecCorpus(const PsConfig& c) : model_(c.model), seed_(c.seed) {
  const std::vector<std::uint8_t> text = readTextCorpus(c.data.path, &files_);
  textBytes_ = static_cast<std::int64_t>(text.size());
  std::unordered_map<std::string, std::int64_t> counts;
  forEachWord(text, [&](std::string_view w) { ++counts[std::string(w)]; });
  std::vector<std::pair<std::string, std::int64_t>> kept;
  for (auto& [w, n] : counts)
    if (n >= c.model.minCount) kept.emplace_back(w, n);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (kept.size() > static_cast<std::size_t>(c.model.vocabSize)) kept.resize(c.model.vocabSize);
  if (kept.size() < 2) {
    throw UserError("data.path: '" + c.data.path + "' has " + std::to_string(kept.size()) +
                    " words seen at least model.min_count (" + std::to_string(c.model.minCount) +
                    ") times; word2vec needs at least 2");
  }
  for (auto& [w, n] : kept) {
    ids_.emplace(w, static_cast<int>(words_.size()));
    words_.push_back(w);
    counts_.push_back(n);
  }
  // The table's rows are model.max_vocab_size words: a smaller vocabulary leaves its last rows
  // unused. Frequent words are kept with probability sqrt(t / f) + t / f (f: the word's share of
  // the text, t: model.sample), drawn from (seed, position), as word2vec's -sample does.
  std::int64_t occurrences = 0;
  for (std::int64_t n : counts_) occurrences += n;
  std::vector<double> keep(words_.size(), 1.0);
  if (c.model.sample > 0) {
    for (std::size_t i = 0; i < words_.size(); ++i) {
      const double f = static_cast<double>(counts_[i]) / static_cast<double>(occurrences);
      keep[i] = std::min(1.0, std::sqrt(c.model.sample / f) + c.model.sample / f);
    }
  }
  std::vector<std::int32_t> stream;
  std::uint64_t position = 0;
  forEachWord(text, [&](std::string_view w) {
    const int i = id(w);
    if (i < 0) return;
    Rng rng(mixSeed(mixSeed(c.seed, 3), position++));
    if (keep[static_cast<std::size_t>(i)] >= 1.0 ||
        rng.uniform() < keep[static_cast<std::size_t>(i)])
      stream.push_back(i);
  });
  const double fraction = c.data.validationFraction;
  const std::size_t every =
      fraction > 0 ? static_cast<std::size_t>(std::max(2.0, std::round(1.0 / fraction))) : 0;
  for (std::size_t b = 0; b * kBlockWords < stream.size(); ++b) {
    const auto first = stream.begin() + static_cast<std::ptrdiff_t>(b * kBlockWords);
    const auto last = stream.begin() +
                      static_cast<std::ptrdiff_t>(std::min(stream.size(), (b + 1) * kBlockWords));
    auto& dst = every != 0 && b % every == every - 1 ? validation_ : train_;
    dst.insert(dst.end(), first, last);
  }
  const auto need = static_cast<std::size_t>(2 * c.model.window + 1);
  if (train_.size() < need || (every != 0 && validation_.size() < need)) {
    throw UserError("data.path: '" + c.data.path + "' has " + std::to_string(train_.size()) +
                    " training and " + std::to_string(validation_.size()) +
                    " validation words in the vocabulary; each split needs at least 2 x "
                    "model.window + 1 = " +
                    std::to_string(need) +
                    (every == 0 ? std::string()
                                : " (every " + std::to_string(every) + "th block of " +
                                      std::to_string(kBlockWords) +
                                      " words is validation: a shorter text needs a larger "
                                      "data.validation_fraction, or 0 to validate on the "
                                      "training words)"));
  }
  if (every == 0) validation_ = train_;
  double total = 0;
  unigram_.resize(words_.size());
  for (std::size_t i = 0; i < words_.size(); ++i) {
    total += std::pow(static_cast<double>(counts_[i]), 0.75);
    unigram_[i] = total;
  }
  for (double& u : unigram_) u /= total;
  unigram_.back() = 1.0;
}

int Word2VecCorpus::id(std::string_view word) const {
  const auto it = ids_.find(std::string(word));
  return it == ids_.end() ? -1 : it->second;
}

std::int64_t Word2VecCorpus::streamWords(Split split) const {
  return static_cast<std::int64_t>((split == Split::Train ? train_ : validation_).size());
}

void Word2VecCorpus::batch(Split split, std::int64_t step, std::int64_t first, int count,
                           Word2VecBatch& out) const {
  const std::vector<std::int32_t>& s = split == Split::Train ? train_ : validation_;
  const int window = model_.window, slots = 2 * window, negatives = model_.negatives;
  out.centres = count;
  out.inputRows.resize(static_cast<std::size_t>(count) * 2);
  out.contexts.resize(static_cast<std::size_t>(count) * slots);
  out.negatives.resize(out.contexts.size() * negatives);
  out.pairs = 0;
  const auto n = static_cast<std::uint64_t>(s.size());
  for (int c = 0; c < count; ++c) {
    Rng rng(mixSeed(
        mixSeed(mixSeed(seed_, split == Split::Train ? 1 : 2), static_cast<std::uint64_t>(step)),
        static_cast<std::uint64_t>(first + c)));
    const auto at = static_cast<std::int64_t>(rng.below(n));
    const std::int32_t w = s[static_cast<std::size_t>(at)];
    out.inputRows[2 * c] = w;
    out.inputRows[2 * c + 1] =
        pairRow(model_, at > 0 ? s[static_cast<std::size_t>(at - 1)] : -1, w);
    for (int j = 0; j < slots; ++j) {
      const std::int64_t offset = j < window ? j - window : j - window + 1;
      const std::int64_t p = at + offset;
      const bool valid = p >= 0 && p < static_cast<std::int64_t>(n);
      out.contexts[static_cast<std::size_t>(c) * slots + j] =
          valid ? s[static_cast<std::size_t>(p)] : -1;
      out.pairs += valid ? 1 : 0;
      std::int32_t* neg =
          out.negatives.data() + (static_cast<std::size_t>(c) * slots + j) * negatives;
      for (int k = 0; k < negatives; ++k) {
        const double u = rng.uniform();
        neg[k] = static_cast<std::int32_t>(std::upper_bound(unigram_.begin(), unigram_.end(), u) -
                                           unigram_.begin());
      }
    }
  }
}

}  // namespace parascope::ps
