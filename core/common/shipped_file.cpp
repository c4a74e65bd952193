#include "core/common/shipped_file.h"

#include <filesystem>

#include "core/common/error.h"

namespace parascope {

std::string shippedFile(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path executable = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw UserError(relative + ": cannot tell where this executable is (" + ec.message() + ")");
  for (fs::path dir = executable.parent_path();; dir = dir.parent_path()) {
    for (const fs::path& candidate : {dir / relative, dir / "share" / "parascope" / relative}) {
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    if (dir == dir.root_path() || !dir.has_parent_path()) break;
  }
  throw UserError(relative + ": not found in the source tree or installation of " +
                  executable.string() + "; name the file explicitly");
}

}  // namespace parascope
