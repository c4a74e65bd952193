// Agreement: one all-gather of digests in the common case; on a mismatch, an all-gather of
// every rank's settings (padded to the longest, as 32-bit words) and the same comparison on
// every rank, so every rank prints the same key.
#include "core/config/config_agreement.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/common/bounded_json.h"
#include "core/common/error.h"

namespace parascope {

namespace {

std::string join(const SettingList& settings) {
  std::string text;
  for (const auto& [key, value] : settings) text += key + '\t' + value + '\n';
  return text;
}

SettingList split(const std::string& text) {
  SettingList out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t tab = text.find('\t', at), end = text.find('\n', at);
    if (tab == std::string::npos || end == std::string::npos || tab > end) break;
    out.emplace_back(text.substr(at, tab - at), text.substr(tab + 1, end - tab - 1));
    at = end + 1;
  }
  return out;
}

// The first key (in sorted order) whose value differs, with both values ("unset" if absent).
std::pair<std::string, std::pair<std::string, std::string>> firstDifference(const SettingList& a,
                                                                            const SettingList& b) {
  const std::map<std::string, std::string> ma(a.begin(), a.end()), mb(b.begin(), b.end());
  std::map<std::string, std::pair<std::string, std::string>> diffs;
  for (const auto& [k, v] : ma) {
    const auto it = mb.find(k);
    if (it == mb.end() || it->second != v) diffs[k] = {v, it == mb.end() ? "unset" : it->second};
  }
  for (const auto& [k, v] : mb) {
    if (!ma.count(k)) diffs[k] = {"unset", v};
  }
  if (diffs.empty()) return {};
  return *diffs.begin();
}

}  // namespace

SettingList canonicalSettings(const nlohmann::json& doc) {
  SettingList out;
  // Explicit stack: documents are depth-limited, but the walk needs no recursion either way.
  std::vector<std::pair<std::string, const nlohmann::json*>> pending{{"", &doc}};
  while (!pending.empty()) {
    auto [path, node] = pending.back();
    pending.pop_back();
    if (!node->is_object() || node->empty()) {
      out.emplace_back(path, node->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      continue;
    }
    for (auto it = node->begin(); it != node->end(); ++it) {
      pending.emplace_back(path.empty() ? it.key() : path + "." + it.key(), &it.value());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::uint64_t settingsDigest(const SettingList& settings) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : join(settings)) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

void agreeOnSettings(Communicator& world, const SettingList& settings) {
  const int n = world.size();
  if (n == 1) return;
  const auto digest = static_cast<std::int64_t>(settingsDigest(settings));
  std::vector<std::int64_t> digests(static_cast<std::size_t>(n));
  world.allGather(&digest, digests.data(), 1, DType::I64);
  if (std::all_of(digests.begin(), digests.end(), [&](std::int64_t d) { return d == digests[0]; }))
    return;

  const std::string text = join(settings);
  const auto length = static_cast<std::int64_t>(text.size());
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(n));
  world.allGather(&length, lengths.data(), 1, DType::I64);
  const std::int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const auto words = static_cast<std::size_t>((longest + 3) / 4);
  std::vector<std::int32_t> mine(std::max<std::size_t>(words, 1), 0);
  std::memcpy(mine.data(), text.data(), text.size());
  std::vector<std::int32_t> all(mine.size() * static_cast<std::size_t>(n));
  world.allGather(mine.data(), all.data(), mine.size(), DType::I32);

  auto settingsOf = [&](int r) {
    const char* base = reinterpret_cast<const char*>(all.data() + mine.size() * r);
    return split(std::string(base, static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  };
  const SettingList first = settingsOf(0);
  for (int r = 1; r < n; ++r) {
    const auto [key, values] = firstDifference(first, settingsOf(r));
    if (key.empty()) continue;
    throw UserError("config: ranks disagree on '" + clipForMessage(key, 120) + "': rank 0 has " +
                    clipForMessage(values.first) + ", rank " + std::to_string(r) + " has " +
                    clipForMessage(values.second) +
                    "; every rank must run the same configuration (same file, overrides and "
                    "options)");
  }
}

}  // namespace parascope
