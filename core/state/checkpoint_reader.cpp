// Reading checkpoints: resolving `latest`, validating the manifest against the files on disk, and
// filling any slice of any layout from the stored slices with positioned reads of only the bytes
// it needs. Every problem is a one-line UserError naming the file and the tensor.
#include "core/state/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/common/crc32.h"
#include "core/common/error.h"
#include "core/common/stop_signal.h"
#include "core/io/safetensors.h"
#include "core/kernels/precision.h"

namespace parascope {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little, "checkpoints store little-endian f32");

namespace {

std::string describe(const CheckpointSlice& s) {
  return "tensor '" + s.tensor + "' (" + stateFieldName(s.field) + ", elements [" +
         std::to_string(s.begin) + ", " + std::to_string(s.begin + s.count) + "))";
}

std::string range(std::int64_t begin, std::int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// A file name that stays in the checkpoint directory: no separator, no "..", not absolute.
bool isPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

// Empty when `path` is a regular file itself (not a link to one); otherwise what it is. A
// checkpoint holds its own files: a link in it could lead a reader anywhere.
std::string notRegular(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISREG(st.st_mode)) return "";
  return S_ISLNK(st.st_mode) ? "is a symbolic link, which a checkpoint never holds"
                             : "is not a regular file";
}

std::string resolveCheckpoint(const std::string& path) {
  const std::string manifest = (fs::path(path) / "manifest.json").string();
  struct stat st {};
  if (::lstat(manifest.c_str(), &st) == 0) {
    if (const std::string problem = notRegular(manifest); !problem.empty()) {
      throw UserError(manifest + ": " + problem);
    }
    return path;
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    throw UserError(path + ": no such checkpoint directory");
  }
  const std::string latest = (fs::path(path) / "latest").string();
  if (::lstat(latest.c_str(), &st) != 0) {
    throw UserError(path + ": not a checkpoint (no manifest.json) and no 'latest' pointer in it");
  }
  if (const std::string problem = notRegular(latest); !problem.empty()) {
    throw UserError(latest + ": " + problem);
  }
  std::string name = readBoundedFile(latest, 256, "checkpoint 'latest' pointer");
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  if (parseStepDirectoryName(name) < 0) {
    throw UserError(latest + ": '" + clipForMessage(name) +
                    "' is not a step directory name (step-NNNNNNNN)");
  }
  const fs::path dir = fs::path(path) / name;
  const bool found = ::lstat(dir.c_str(), &st) == 0;
  if (found && S_ISLNK(st.st_mode)) {
    throw UserError(latest + ": points to '" + name +
                    "', which is a symbolic link, which a checkpoint never holds");
  }
  if (!found || !S_ISDIR(st.st_mode) || ::lstat((dir / "manifest.json").c_str(), &st) != 0) {
    throw UserError(latest + ": points to '" + name + "', which has no manifest.json");
  }
  if (const std::string problem = notRegular((dir / "manifest.json").string()); !problem.empty()) {
    throw UserError((dir / "manifest.json").string() + ": " + problem);
  }
  return dir.string();
}

class Fd {
 public:
  // A link is refused, not followed (O_NOFOLLOW): a checkpoint's files are its own.
  explicit Fd(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) {
    if (fd_ < 0 && errno == ELOOP) {
      throw UserError(path + ": is a symbolic link, which a checkpoint never holds");
    }
    if (fd_ < 0) throw UserError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void readAt(const Fd& fd, void* out, std::int64_t bytes, std::int64_t offset,
            const std::string& path) {
  auto* p = static_cast<char*>(out);
  for (std::int64_t done = 0; done < bytes;) {
    const ssize_t n = ::pread(fd.get(), p + done, static_cast<std::size_t>(bytes - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw UserError(
          path + ": cannot read bytes " + range(offset, offset + bytes) +
          (n == 0 ? " (truncated file)" : " (" + std::string(std::strerror(errno)) + ")"));
    }
    done += n;
  }
}

}  // namespace

std::string resolveCheckpointDirectory(const std::string& path) {
  return resolveCheckpoint(path);
}

std::uint32_t fileChecksum(const std::string& path, std::int64_t* bytes) {
  std::vector<unsigned char> buffer(std::size_t{1} << 20);
  const Fd fd(path);
  std::uint32_t crc = 0;
  *bytes = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UserError(path + ": cannot read (" + std::strerror(errno) + ")");
    if (n == 0) break;
    crc = crc32Update(crc, buffer.data(), static_cast<std::size_t>(n));
    *bytes += n;
    throwIfStopRequested();  // `checkpoint verify` of a large checkpoint stops within a MiB
  }
  return crc;
}

CheckpointReader::CheckpointReader(const std::string& path, bool verifyOnRead)
    : directory_(resolveCheckpoint(path)), verifyOnRead_(verifyOnRead) {
  const std::string where = (fs::path(directory_) / "manifest.json").string();
  const nlohmann::json j =
      parseBoundedJson(readBoundedFile(where, kManifestJsonLimits.maxBytes, "checkpoint manifest"),
                       where, kManifestJsonLimits);
  manifest_ = manifestFromJson(j, where);

  for (const LogicalTensor& t : manifest_.tensors) {
    std::int64_t n = 1;
    for (std::int64_t d : t.shape) n *= d;
    if (!numel_.emplace(t.name, n).second) {
      throw UserError(where + ": tensor '" + t.name + "' is listed twice");
    }
  }
  std::map<std::string, std::int64_t> fileBytes;
  for (const CheckpointFile& f : manifest_.files) {
    if (!isPlainFileName(f.name)) {
      throw UserError(where + ": file name '" + clipForMessage(f.name) +
                      "' must be a plain name inside the checkpoint directory (no '/', '\\' or "
                      "'..')");
    }
    if (!fileBytes.emplace(f.name, f.bytes).second) {
      throw UserError(where + ": file '" + f.name + "' is listed twice");
    }
    const std::string file = (fs::path(directory_) / f.name).string();
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) {
      throw UserError(file + ": missing (listed in manifest.json)");
    }
    if (const std::string problem = notRegular(file); !problem.empty()) {
      throw UserError(file + ": " + problem);
    }
    if (st.st_size != f.bytes) {
      throw UserError(file + ": " + std::to_string(st.st_size) + " bytes, manifest.json says " +
                      std::to_string(f.bytes) + " (truncated or replaced file)");
    }
  }
  for (std::size_t i = 0; i < manifest_.slices.size(); ++i) {
    const CheckpointSlice& s = manifest_.slices[i];
    const auto tensor = numel_.find(s.tensor);
    if (tensor == numel_.end()) {
      throw UserError(where + ": slice of tensor '" + clipForMessage(s.tensor, 200) +
                      "', which is not in the tensors list");
    }
    const auto file = fileBytes.find(s.file);
    if (file == fileBytes.end()) {
      throw UserError(where + ": " + describe(s) + " is in file '" + clipForMessage(s.file) +
                      "', which is not in the files list");
    }
    if (s.begin + s.count > tensor->second) {
      throw UserError(where + ": " + describe(s) + " lies outside the tensor's " +
                      std::to_string(tensor->second) + " elements");
    }
    if (s.bytes != s.count * 4 || s.offset + s.bytes > file->second) {
      throw UserError((fs::path(directory_) / s.file).string() + ": " + describe(s) + " at bytes " +
                      range(s.offset, s.offset + s.bytes) + " lies outside the file's " +
                      std::to_string(file->second) + " bytes or is not count * 4 bytes");
    }
    index_[{s.tensor, s.field}].push_back(i);
  }
  // Every element of every (tensor, field) stored exactly once.
  for (const LogicalTensor& t : manifest_.tensors) {
    for (int f = 0; f < kStateFieldCount; ++f) {
      const auto field = static_cast<StateField>(f);
      std::vector<std::size_t>& order = index_[{t.name, field}];
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return manifest_.slices[a].begin < manifest_.slices[b].begin;
      });
      std::int64_t covered = 0;
      const CheckpointSlice* previous = nullptr;
      for (std::size_t i : order) {
        const CheckpointSlice& s = manifest_.slices[i];
        if (s.begin < covered) {
          throw UserError(where + ": tensor '" + t.name + "' (" + stateFieldName(field) +
                          "): slices overlap at elements " +
                          range(s.begin, std::min(covered, s.begin + s.count)) + " (files '" +
                          previous->file + "' and '" + s.file + "')");
        }
        if (s.begin > covered) break;
        covered = s.begin + s.count;
        previous = &s;
      }
      if (covered != numel_[t.name]) {
        std::int64_t gapEnd = numel_[t.name];
        for (std::size_t i : order) {
          if (manifest_.slices[i].begin > covered) {
            gapEnd = manifest_.slices[i].begin;
            break;
          }
        }
        throw UserError(where + ": tensor '" + t.name + "' (" + stateFieldName(field) +
                        "): elements " + range(covered, gapEnd) + " are not stored");
      }
    }
  }
  checkShardHeaders();
  checked_ =
      std::vector<std::atomic<bool>>(manifest_.formatVersion >= 2 ? 0 : manifest_.files.size());
}

// Every slice where the manifest says it is: the shard's own header (safetensors) names it
// (tensor/field/first element), as F32 of `count` elements at the manifest's offset, and lists
// nothing else. An offset moved into the header or onto another slice's bytes, or two slices
// sharing bytes, is refused here rather than read as weights.
void CheckpointReader::checkShardHeaders() const {
  std::map<std::string, std::vector<const CheckpointSlice*>> byFile;
  for (const CheckpointSlice& s : manifest_.slices) byFile[s.file].push_back(&s);
  for (const CheckpointFile& f : manifest_.files) {
    const std::string path = (fs::path(directory_) / f.name).string();
    const SafetensorsReader shard(path);
    const auto format = shard.metadata().find("format");
    if (format == shard.metadata().end() || format->second != "parascope-checkpoint") {
      throw UserError(path +
                      ": not a ParaScope checkpoint shard (its header's __metadata__ has "
                      "no format \"parascope-checkpoint\")");
    }
    const std::vector<const CheckpointSlice*>& slices = byFile[f.name];
    for (const CheckpointSlice* s : slices) {
      const std::string name =
          s->tensor + "/" + stateFieldName(s->field) + "/" + std::to_string(s->begin);
      const auto entry = shard.tensors().find(name);
      if (entry == shard.tensors().end()) {
        throw UserError(path + ": " + describe(*s) + " is not in the shard's header (no entry '" +
                        clipForMessage(name, 200) + "')");
      }
      const SafetensorsReader::Entry& e = entry->second;
      if (e.dtype != DType::F32 || e.shape != Shape{s->count} ||
          static_cast<std::int64_t>(e.offset) != s->offset) {
        throw UserError(path + ": " + describe(*s) + " is at bytes " +
                        range(s->offset, s->offset + s->bytes) +
                        " in manifest.json but the shard's header has it as " +
                        std::string(dtypeName(e.dtype)) + " " + shapeString(e.shape) +
                        " from byte " + std::to_string(e.offset));
      }
    }
    if (shard.tensors().size() != slices.size()) {
      throw UserError(path + ": the shard's header lists " +
                      std::to_string(shard.tensors().size()) + " tensors, manifest.json " +
                      std::to_string(slices.size()) + " slices in it");
    }
  }
}

namespace {

// Reads bytes [offset, offset + bytes) of `fd` through `buffer` (chunks of its size), adding them
// to `crc`.
std::uint32_t crcOfBytes(const Fd& fd, std::int64_t offset, std::int64_t bytes,
                         std::vector<float>& buffer, std::uint32_t crc, const std::string& path) {
  const auto chunk = static_cast<std::int64_t>(buffer.size() * sizeof(float));
  for (std::int64_t at = 0; at < bytes; at += chunk) {
    const std::int64_t n = std::min(chunk, bytes - at);
    readAt(fd, buffer.data(), n, offset + at, path);
    crc = crc32Update(crc, buffer.data(), static_cast<std::size_t>(n));
  }
  return crc;
}

void throwCorrupted(const std::string& path, const std::string& what, std::uint32_t actual,
                    std::uint32_t recorded) {
  char message[128];
  std::snprintf(message, sizeof message,
                ": CRC32 %08x, manifest.json says %08x (corrupted file; nothing was loaded)",
                actual, recorded);
  throw UserError(path + ": " + what + message);
}

}  // namespace

void CheckpointReader::read(const StateSlice& dest) const {
  const auto tensor = numel_.find(dest.tensor);
  if (tensor == numel_.end()) {
    throw UserError(directory_ + ": no tensor '" + dest.tensor + "' in this checkpoint");
  }
  const std::int64_t end = dest.begin + dest.count;
  const std::string what = "tensor '" + dest.tensor + "' (" + stateFieldName(dest.field) + ")";
  if (dest.begin < 0 || dest.count < 0 || end > tensor->second) {
    throw UserError(directory_ + ": " + what + " has " + std::to_string(tensor->second) +
                    " elements; cannot read " + range(dest.begin, end));
  }
  if (dest.dtype != DType::F32 && dest.dtype != DType::BF16 && dest.dtype != DType::F16) {
    throw std::invalid_argument("CheckpointReader::read: dest must be F32, BF16 or F16");
  }
  const auto found = index_.find({dest.tensor, dest.field});
  const std::vector<std::size_t> none;
  const std::vector<std::size_t>& order = found == index_.end() ? none : found->second;
  // The first stored slice that may hold dest.begin: the last one beginning at or before it.
  auto it = std::upper_bound(
      order.begin(), order.end(), dest.begin,
      [&](std::int64_t at, std::size_t i) { return at < manifest_.slices[i].begin; });
  if (it != order.begin()) --it;
  // Elements per read: 256 KiB, so a checksum runs over bytes still in the core's cache.
  constexpr std::int64_t kChunk = 65536;
  std::vector<float> staging(dest.dtype == DType::F32 ? 0 : kChunk);
  for (std::int64_t at = dest.begin; at < end; ++it) {
    if (it == order.end() || manifest_.slices[*it].begin > at ||
        manifest_.slices[*it].begin + manifest_.slices[*it].count <= at) {
      throw UserError(directory_ + ": " + what + ": elements " + range(at, end) +
                      " are not stored");
    }
    const CheckpointSlice& s = manifest_.slices[*it];
    const std::string path = (fs::path(directory_) / s.file).string();
    if (verifyOnRead_ && manifest_.formatVersion < 2) verifyFile(s.file);
    const Fd fd(path);
    const std::int64_t stop = std::min(end, s.begin + s.count);
    // Format 2: the CRC of the part read, unless another read (a replica's) has it already;
    // finishChecks joins the parts.
    const std::optional<std::size_t> piece = verifyOnRead_ && manifest_.formatVersion >= 2
                                                 ? claimPiece(*it, at - s.begin, stop - at)
                                                 : std::nullopt;
    std::uint32_t crc = 0;
    for (; at < stop;) {
      const std::int64_t n = std::min(kChunk, stop - at);
      const std::int64_t fileOffset = s.offset + (at - s.begin) * 4;
      const std::int64_t destIndex = at - dest.begin;
      float* out =
          dest.dtype == DType::F32 ? static_cast<float*>(dest.data) + destIndex : staging.data();
      readAt(fd, out, n * 4, fileOffset, path);
      if (piece) crc = crc32Update(crc, out, static_cast<std::size_t>(n) * 4);
      if (dest.dtype != DType::F32) {
        kernels::narrow(staging.data(), static_cast<std::uint16_t*>(dest.data) + destIndex, n,
                        dest.dtype);
      }
      at += n;
    }
    if (piece) {
      const std::lock_guard lock(piecesMutex_);
      pieces_[*it][*piece].crc = crc;
    }
  }
}

std::optional<std::size_t> CheckpointReader::claimPiece(std::size_t slice, std::int64_t begin,
                                                        std::int64_t count) const {
  const std::lock_guard lock(piecesMutex_);
  std::vector<Piece>& list = pieces_[slice];
  for (const Piece& p : list) {
    if (p.begin == begin && p.count == count) return std::nullopt;
  }
  list.push_back({begin, count, 0});
  return list.size() - 1;
}

void CheckpointReader::finishChecks() const {
  const std::lock_guard lock(piecesMutex_);
  std::vector<float> buffer;
  for (auto& [index, list] : pieces_) {
    const CheckpointSlice& s = manifest_.slices[index];
    std::sort(list.begin(), list.end(), [](const Piece& a, const Piece& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.count > b.count;
    });
    // The parts in order; what no read took (another process's share, or between parts that
    // overlap) is read here.
    const std::string path = (fs::path(directory_) / s.file).string();
    std::optional<Fd> fd;
    const auto beside = [&](std::int64_t from, std::int64_t to, std::uint32_t crc) {
      if (to <= from) return crc;
      if (!fd) fd.emplace(path);
      if (buffer.empty()) buffer.resize(65536);
      return crcOfBytes(*fd, s.offset + from * 4, (to - from) * 4, buffer, crc, path);
    };
    std::uint32_t crc = 0;
    std::int64_t covered = 0;
    for (const Piece& p : list) {
      if (p.begin < covered) continue;
      crc = beside(covered, p.begin, crc);
      crc = crc32Combine(crc, p.crc, p.count * 4);
      covered = p.begin + p.count;
    }
    crc = beside(covered, s.count, crc);
    if (crc != s.crc32) {
      pieces_.clear();
      throwCorrupted(path, describe(s), crc, s.crc32);
    }
  }
  pieces_.clear();
}

void CheckpointReader::verifyFile(const std::string& name) const {
  const auto file = std::find_if(manifest_.files.begin(), manifest_.files.end(),
                                 [&](const CheckpointFile& f) { return f.name == name; });
  const auto index = static_cast<std::size_t>(file - manifest_.files.begin());
  if (checked_[index].exchange(true)) return;
  try {
    verifyFileChecksum(*file);
  } catch (...) {
    checked_[index] = false;  // a later read refuses it again
    throw;
  }
}

void CheckpointReader::verifyFileChecksum(const CheckpointFile& f) const {
  const std::string path = (fs::path(directory_) / f.name).string();
  std::int64_t total = 0;
  const std::uint32_t crc = fileChecksum(path, &total);
  if (total != f.bytes || crc != f.crc32) {
    char message[160];
    std::snprintf(message, sizeof message,
                  ": CRC32 %08x over %lld bytes, manifest.json says %08x over %lld bytes "
                  "(corrupted file)",
                  static_cast<unsigned>(crc), static_cast<long long>(total), f.crc32,
                  static_cast<long long>(f.bytes));
    throw UserError(path + message);
  }
}

void CheckpointReader::verifyChecksums() const {
  for (const CheckpointFile& f : manifest_.files) verifyFileChecksum(f);
}

void checkCheckpointTensors(const CheckpointManifest& manifest,
                            const std::vector<LogicalTensor>& expected, const std::string& where) {
  std::map<std::string, const LogicalTensor*> stored;
  for (const LogicalTensor& t : manifest.tensors) stored.emplace(t.name, &t);
  for (const LogicalTensor& t : expected) {
    const auto it = stored.find(t.name);
    if (it == stored.end()) {
      throw UserError(where + ": the model's tensor '" + t.name + "' " + shapeString(t.shape) +
                      " is not in the checkpoint");
    }
    if (it->second->shape != t.shape) {
      throw UserError(where + ": tensor '" + t.name + "' is " + shapeString(it->second->shape) +
                      " in the checkpoint but " + shapeString(t.shape) +
                      " in this model (a checkpoint of another model?)");
    }
    stored.erase(it);
  }
  if (!stored.empty()) {
    throw UserError(where + ": the checkpoint's tensor '" + stored.begin()->first +
                    "' is not in this model (a checkpoint of another model?)");
  }
}

}  // namespace parascope
