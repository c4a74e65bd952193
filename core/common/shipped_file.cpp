#include "core/common/shipped_file.h"

#include "core/common/error.h"

namespace parascope {

namespace fs = std::filesystem;

std::string shippedFileAbove(const fs::path& start, const std::string& relative) {
  std::error_code ec;
  for (fs::path dir = start;; dir = dir.parent_path()) {
    for (const fs::path& candidate : {dir / relative, dir / "share" / "parascope" / relative}) {
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    if (dir == dir.root_path() || !dir.has_parent_path()) break;
  }
  throw UserError(relative + ": not found above " + start.string() +
                  " (in a source tree, or an installation's share/parascope); name the file "
                  "explicitly");
}

std::string shippedFile(const std::string& relative) {
  std::error_code ec;
  const fs::path executable = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw UserError(relative + ": cannot tell where this executable is (" + ec.message() + ")");
  return shippedFileAbove(executable.parent_path(), relative);
}

}  // namespace parascope
