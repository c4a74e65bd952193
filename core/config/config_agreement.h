// Ranks of one job must run the same configuration: under mpirun every process reads its own
// files and command line, and ranks that disagree on a size or a step count would corrupt each
// other's buffers in the first collective. At start every rank contributes the canonical form of
// its settings (every leaf key of the config document with its value, plus the command's output
// names); a 64-bit digest is exchanged first, and only when digests differ the full forms, so
// that every rank refuses with the same message naming the first differing key.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/communicator.h"

namespace parascope {

// (key path, compact JSON value) for every leaf of `doc`, sorted by key; arrays are leaves.
using SettingList = std::vector<std::pair<std::string, std::string>>;
SettingList canonicalSettings(const nlohmann::json& doc);

// FNV-1a over the settings, keys and values separated so that no two lists share a text.
std::uint64_t settingsDigest(const SettingList& settings);

// Collective over `world` (every rank calls it before any collective that depends on the
// settings). Returns when all ranks hold the same settings; otherwise throws, on every rank,
// UserError "config: ranks disagree on 'KEY': rank 0 has V0, rank R has VR; ...".
void agreeOnSettings(Communicator& world, const SettingList& settings);

}  // namespace parascope
