// The one way the engine writes a file a user named (weights, gradients, traces): the path is
// checked before any work (its directory exists and is writable; the target is absent or a
// regular file, never a directory, device, FIFO, socket or symbolic link), the bytes go to a
// temporary file beside it, and only a complete, fsync'ed file is renamed over the target.
// The temporary is removed on every error, on destruction without commit(), and when a stop
// signal (core/common/stop_signal.h) ends the run; readers never see half a file.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace parascope {

// A file or directory the command reads, named as the user named it ("--weights", "the
// checkpoint").
struct InputPath {
  std::string what;
  std::string path;
};

// Throws UserError "<what> '<path>': <why>; <what would be right>" if `path` cannot be written as
// a new or replaced regular file, or if it is one of the command's `inputs` (the same file, by
// device and inode, whatever the name: a hard link or another spelling) or lies inside an input
// that is a directory (a checkpoint the command reads). No file is created.
void checkOutputPath(const std::string& path, const std::string& what,
                     const std::vector<InputPath>& inputs = {});

class OutputFile {
 public:
  // Checks the path (checkOutputPath) and creates the temporary; UserError on failure.
  OutputFile(std::string path, std::string what);
  ~OutputFile();  // without commit(): closes and removes the temporary
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends; std::runtime_error naming the file and the system's reason (e.g. no space left: a
  // failure of the system, not the user's error), after which the temporary is gone. Also the place
  // a pending stop signal ends the write.
  void write(const void* data, std::size_t bytes);
  // The temporary's descriptor, for writers that format through another library (zlib); they
  // must not close it.
  int descriptor() const { return fd_; }
  // fsync, close, and rename over the target (re-checked: a directory or device put there
  // meanwhile is refused, never replaced: UserError); std::runtime_error if the data cannot be
  // flushed or closed; either way the temporary is removed.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temporaryPath() const { return tmpPath_; }

  [[noreturn]] void fail(const std::string& why);

 private:
  void discard();

  std::string path_;
  std::string what_;
  std::string tmpPath_;
  int fd_ = -1;
};

}  // namespace parascope
