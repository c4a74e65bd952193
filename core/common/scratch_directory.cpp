#include "core/common/scratch_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/common/error.h"

namespace parascope {

ScratchDirectory::ScratchDirectory(const std::string& parent, const std::string& prefix,
                                   const std::string& what) {
  const std::string base =
      parent.empty() ? std::filesystem::temp_directory_path().string() : parent;
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) {
    throw UserError(what + " '" + base + "': " + std::strerror(errno) +
                    "; name an existing directory");
  }
  if (!S_ISDIR(st.st_mode)) throw UserError(what + " '" + base + "': is not a directory");
  std::string pattern = (std::filesystem::path(base) / (prefix + "-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    throw UserError(what + " '" + base + "': cannot create a directory in it: " +
                    std::strerror(errno) + "; name a writable directory");
  }
  path_ = name.data();
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace parascope
