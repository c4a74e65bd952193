// Files ParaScope ships beside its executables (the default config, the PyTorch comparison
// scripts), found from where the running executable is, never from a path fixed at build time:
// that may name a temporary directory long gone, or since made by someone else.
#pragma once

#include <string>

namespace parascope {

// `relative` (e.g. "resources/configs/default.json") in the tree the running executable belongs
// to: the first directory above the executable holding it (a build directory sits inside its
// source tree), or holding share/parascope/<relative> (an installation). UserError naming the
// file and the executable if there is none.
std::string shippedFile(const std::string& relative);

}  // namespace parascope
