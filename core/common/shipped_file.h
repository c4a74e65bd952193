// Files ParaScope ships beside its executables (the default config, the PyTorch comparison
// scripts), found from where the running executable is, never from a path fixed at build time:
// that may name a temporary directory long gone, or since made by someone else.
#pragma once

#include <filesystem>
#include <string>

namespace parascope {

// `relative` (e.g. "resources/configs/default.json") in the tree the running executable belongs
// to: shippedFileAbove from the executable's directory.
std::string shippedFile(const std::string& relative);

// The first of `start` and the directories above it that holds `relative` (a build directory
// sits inside its source tree) or share/parascope/<relative> (an installation). UserError naming
// the file and `start` if none does.
std::string shippedFileAbove(const std::filesystem::path& start, const std::string& relative);

}  // namespace parascope
