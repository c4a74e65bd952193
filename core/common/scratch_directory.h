// A directory a command makes for its own temporary files inside one the user names (a
// benchmark's --dir), and removes with everything in it when done. Only what it created is ever
// removed: the user's directory, and whatever else is in it, is left as it was (`--dir .` or
// `--dir ~` are safe). The directory is new (mkdtemp, mode 0700), so no path in it can be a link
// or a file someone else put there.
#pragma once

#include <string>

namespace parascope {

class ScratchDirectory {
 public:
  // Creates `<parent>/<prefix>-XXXXXX`; UserError naming `what` and `parent` if `parent` is not
  // an existing, writable directory. `parent` empty: the system's temporary directory.
  ScratchDirectory(const std::string& parent, const std::string& prefix, const std::string& what);
  ~ScratchDirectory();  // removes the directory and everything in it
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace parascope
