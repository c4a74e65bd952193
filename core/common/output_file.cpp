// Output files: lstat-based checks (a symbolic link is judged as itself, never followed), a
// temporary created with O_EXCL beside the target (same file system, so rename is atomic), and
// fsync of the file and then its directory so a completed rename survives a crash.
#include "core/common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/common/error.h"
#include "core/common/stop_signal.h"

namespace parascope {

namespace {

std::string directoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Empty when `path` may be replaced by a regular file; otherwise why not.
std::string targetProblem(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "" : std::string("cannot inspect it: ") + std::strerror(errno);
  }
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "is a directory; name a file inside it";
  if (S_ISLNK(st.st_mode)) return "is a symbolic link; name the file it points to";
  return "is a device, FIFO or socket, not a regular file; name a regular file";
}

bool sameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Empty when writing `path` leaves `input` as it was; otherwise why it would not.
std::string inputProblem(const std::string& path, const InputPath& input) {
  struct stat in {};
  if (input.path.empty() || ::stat(input.path.c_str(), &in) != 0) return "";
  const std::string named = input.what + " '" + input.path + "'";
  struct stat out {};
  if (S_ISREG(in.st_mode)) {
    if (::stat(path.c_str(), &out) == 0 && sameFile(in, out)) {
      return "is " + named + ", which this command reads; name another file";
    }
    return "";
  }
  if (!S_ISDIR(in.st_mode)) return "";
  // Every directory above the output, by inode: '..' and links in the name cannot hide it.
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::canonical(directoryOf(path), ec);
  if (ec) return "";
  for (;;) {
    if (::stat(dir.c_str(), &out) == 0 && sameFile(in, out)) {
      return "is inside " + named + ", which this command reads; write it elsewhere";
    }
    if (dir == dir.root_path() || !dir.has_parent_path()) return "";
    dir = dir.parent_path();
  }
}

}  // namespace

void checkOutputPath(const std::string& path, const std::string& what,
                     const std::vector<InputPath>& inputs) {
  const std::string where = what + " '" + path + "': ";
  if (path.empty()) throw UserError(what + ": the file name is empty");
  if (path.back() == '/') throw UserError(where + "names a directory; name a file inside it");
  const std::string dir = directoryOf(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw UserError(where + "directory '" + dir + "' does not exist; create it first");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UserError(where + "directory '" + dir + "' is not writable");
  }
  if (const std::string problem = targetProblem(path); !problem.empty()) {
    throw UserError(where + problem);
  }
  for (const InputPath& input : inputs) {
    if (const std::string problem = inputProblem(path, input); !problem.empty()) {
      throw UserError(where + problem);
    }
  }
}

OutputFile::OutputFile(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  checkOutputPath(path_, what_);
  // Hidden, and named after the process so concurrent writers never collide.
  const std::filesystem::path p(path_);
  std::string name(1, '.');  // appended, not "." + ...: GCC 12 misreads that as an overlap
  name += p.filename().string();
  name += ".tmp" + std::to_string(::getpid());
  tmpPath_ = (p.parent_path() / name).string();
  fd_ = ::open(tmpPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == EEXIST) {  // left by a killed process with a recycled pid
    ::unlink(tmpPath_.c_str());
    fd_ = ::open(tmpPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd_ < 0) {
    throw UserError(what_ + " '" + path_ +
                    "': cannot create a file in its directory: " + std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  discard();
}

void OutputFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmpPath_.c_str());
}

// The system failed the write (no space left, an I/O error): not the user's error, so not a
// UserError (front ends exit 1, not 2).
void OutputFile::fail(const std::string& why) {
  discard();
  throw std::runtime_error(what_ + " '" + path_ + "': " + why);
}

void OutputFile::write(const void* data, std::size_t bytes) {
  if (pendingStopSignal() != 0) {
    discard();
    throwIfStopRequested();
  }
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::string("write failed: ") + std::strerror(errno));
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void OutputFile::commit() {
  if (fd_ < 0) throw UserError(what_ + " '" + path_ + "': already written or discarded");
  if (::fsync(fd_) != 0) fail(std::string("cannot flush to disk: ") + std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmpPath_.c_str());
    throw std::runtime_error(what_ + " '" + path_ + "': cannot close: " + std::strerror(errno));
  }
  fd_ = -1;
  // Whatever appeared at the target during the run is judged again: rename would replace a
  // device node or an empty directory.
  const std::string problem = targetProblem(path_);
  if (!problem.empty() || ::rename(tmpPath_.c_str(), path_.c_str()) != 0) {
    const std::string why = problem.empty() ? std::string(std::strerror(errno)) : problem;
    ::unlink(tmpPath_.c_str());
    throw UserError(what_ + " '" + path_ + "': " + why);
  }
  const int dir = ::open(directoryOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace parascope
