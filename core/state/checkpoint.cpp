// Writing checkpoints (shards, manifest, the atomic commit and pruning) and manifest.json's
// document. Reading and validation are in checkpoint_reader.cpp. Every step that makes data
// durable says which fsync orders it before the next rename; docs/checkpoints.md has the protocol.
#include "core/state/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "core/common/crc32.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/io/safetensors.h"
#include "core/kernels/precision.h"

namespace parascope {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
constexpr const char* kStagingPrefix = ".staging-";
// Written first into every directory a save makes; only directories holding it are ever replaced
// or removed (docs/checkpoints.md, "What a save removes").
constexpr const char* kOwnerMark = ".parascope-checkpoint";
constexpr const char* kLockName = ".parascope-lock";  // CheckpointLock's

[[noreturn]] void failSystem(const std::string& what, const std::string& path) {
  throw UserError(path + ": " + what + " failed: " + std::strerror(errno));
}

// fsync on a directory makes the entries created or renamed in it durable.
void syncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) failSystem("open for fsync", path);
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    failSystem("fsync", path);
  }
  ::close(fd);
}

void renameOrFail(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) failSystem("rename to '" + to + "'", from);
}

// Entry `name` of the directory `dirFd`, judged as itself (a link is never followed).
bool isEntry(int dirFd, const std::string& name, mode_t type) {
  struct stat st {};
  return ::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         (st.st_mode & S_IFMT) == type;
}

// The names a save writes into a step directory: the manifest, the shards, their temporaries
// (core/common/output_file.cpp: "." + name + ".tmp" + pid) and the mark.
bool isSavedFileName(const std::string& name) {
  const auto digits = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const auto isFile = [&](std::string_view n) {
    constexpr std::string_view kRank = "rank-", kShard = ".safetensors";
    return n == "manifest.json" ||
           (n.size() > kRank.size() + kShard.size() && n.starts_with(kRank) &&
            n.ends_with(kShard) &&
            digits(n.substr(kRank.size(), n.size() - kRank.size() - kShard.size())));
  };
  const std::string_view n = name;
  if (n == kOwnerMark || isFile(n)) return true;
  const std::size_t tmp = n.rfind(".tmp");
  return n.starts_with('.') && tmp != std::string_view::npos && digits(n.substr(tmp + 4)) &&
         isFile(n.substr(1, tmp - 1));
}

// Creates `dir` (and its parents) if missing; UserError if it is not a writable directory.
void createCheckpointDirectory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir) || ::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UserError("checkpoint directory '" + dir + "': cannot be created or written" +
                    (ec ? " (" + ec.message() + ")" : std::string()) +
                    "; name a writable directory");
  }
}

// The temporary `latest` is written to before its rename (core/common/output_file.cpp).
bool isPointerTemporary(std::string_view name) {
  constexpr std::string_view kPrefix = ".latest.tmp";
  return name.size() > kPrefix.size() && name.starts_with(kPrefix) &&
         name.find_first_not_of("0123456789", kPrefix.size()) == std::string_view::npos;
}

// Whether `name` in `dir` is a directory a save made: a real directory (not a link to one)
// holding the mark, a regular file, which a save writes before anything else.
bool isOwnDirectory(const std::string& dir, const std::string& name) {
  const int parent = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return false;
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(parent);
  if (fd < 0) return false;
  const bool own = isEntry(fd, kOwnerMark, S_IFREG);
  ::close(fd);
  return own;
}

// Removes `name` in `dir` if a save made it, and in it only what a save writes: the manifest
// first (a kill from then on leaves a directory no reader takes for a checkpoint, which the next
// prune removes), then shards and temporaries, the mark last, and the directory itself if nothing
// else is left in it. Everything goes through descriptors opened without following links, so a
// link put in its place is never followed.
// An empty directory without the mark is removed too (rmdir refuses anything else): a save killed
// between creating its staging directory and writing the mark leaves one, and so does a removal
// killed after the mark went; nothing is lost with an empty directory.
void removeOwnDirectory(const std::string& dir, const std::string& name) {
  const int parent = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return;
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || !isEntry(fd, kOwnerMark, S_IFREG)) {
    if (fd >= 0) {
      ::close(fd);
      ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
    }
    ::close(parent);
    return;
  }
  ::unlinkat(fd, "manifest.json", 0);
  std::vector<std::string> saved;
  const int listing = ::dup(fd);  // fdopendir owns it from here, closedir closes it
  if (DIR* entries = listing >= 0 ? ::fdopendir(listing) : nullptr) {
    while (const dirent* e = ::readdir(entries)) {
      const std::string n = e->d_name;
      if (n != kOwnerMark && isSavedFileName(n)) saved.push_back(n);
    }
    ::closedir(entries);
  } else if (listing >= 0) {
    ::close(listing);
  }
  for (const std::string& n : saved) ::unlinkat(fd, n.c_str(), 0);
  ::unlinkat(fd, kOwnerMark, 0);
  ::close(fd);
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);  // fails, harmlessly, if anything else is in it
  ::close(parent);
}

// Keeps the `keep` newest complete checkpoints and `committed`; removes older complete ones and
// every incomplete step directory a save made (only a killed removal leaves one). Entries that
// are not directories a save made (a user's file or directory with such a name, a link) are
// left alone.
void pruneCheckpoints(const std::string& dir, const std::string& committed, int keep) {
  std::vector<std::pair<int, std::string>> complete;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const int step = parseStepDirectoryName(name);
    if (step < 0 || name == committed) continue;
    if (!isOwnDirectory(dir, name)) {
      removeOwnDirectory(dir, name);  // only if empty
      continue;
    }
    struct stat st {};
    if (::lstat((e.path() / "manifest.json").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      removeOwnDirectory(dir, name);
    } else {
      complete.emplace_back(step, name);
    }
  }
  if (keep <= 0) return;
  std::sort(complete.begin(), complete.end(), [](const auto& a, const auto& b) { return a > b; });
  // The committed checkpoint is one of the kept.
  for (std::size_t i = static_cast<std::size_t>(keep) - 1; i < complete.size(); ++i) {
    removeOwnDirectory(dir, complete[i].second);
  }
}

// Swaps two directory entries atomically (Linux renameat2); false where the file system cannot.
bool exchangeEntries(const std::string& a, const std::string& b) {
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
}

// manifest.json's own checksum: the CRC-32 of the document without it, as compact JSON (keys
// sorted, numbers in their shortest exact form), so it covers what the manifest says, not how
// its whitespace falls.
constexpr const char* kManifestChecksum = "manifest_crc32";

std::uint32_t documentChecksum(const nlohmann::json& j) {
  const std::string text = j.dump();
  return crc32Update(0, text.data(), text.size());
}

}  // namespace

std::uint32_t jsonDocumentChecksum(const nlohmann::json& j) {
  return documentChecksum(j);
}

namespace {

const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": must be a JSON object");
  const auto it = j.find(key);
  if (it == j.end()) throw UserError(where + ": missing '" + key + "'");
  return *it;
}

std::int64_t integerMember(const nlohmann::json& j, const char* key, const std::string& where,
                           std::int64_t lo, std::int64_t hi) {
  const nlohmann::json& v = member(j, key, where);
  const bool fits = v.is_number_integer() &&
                    !(v.is_number_unsigned() &&
                      v.get<std::uint64_t>() >
                          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  if (!fits || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    throw UserError(where + ": '" + key + "' is " + describeJson(v) + ", expected an integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v.get<std::int64_t>();
}

std::string stringMember(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json& v = member(j, key, where);
  if (!v.is_string()) {
    throw UserError(where + ": '" + key + "' is " + describeJson(v) + ", expected a string");
  }
  return v.get<std::string>();
}

const nlohmann::json& arrayMember(const nlohmann::json& j, const char* key,
                                  const std::string& where) {
  const nlohmann::json& v = member(j, key, where);
  if (!v.is_array()) throw UserError(where + ": '" + key + "' must be an array");
  return v;
}

StateField parseField(const std::string& name, const std::string& where) {
  for (int f = 0; f < kStateFieldCount; ++f) {
    if (name == stateFieldName(static_cast<StateField>(f))) return static_cast<StateField>(f);
  }
  throw UserError(where + ": field '" + clipForMessage(name) +
                  "' is not one of param, exp_avg, exp_avg_sq");
}

LogicalTensor tensorFromJson(const nlohmann::json& j, const std::string& where) {
  LogicalTensor t{stringMember(j, "name", where), {}};
  const std::string at = where + " (tensor '" + clipForMessage(t.name, 200) + "')";
  if (stringMember(j, "dtype", at) != "F32") throw UserError(at + ": dtype must be \"F32\"");
  std::int64_t numel = 1;
  for (const nlohmann::json& d : arrayMember(j, "shape", at)) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > kMaxElements ||
        (d.get<std::int64_t>() != 0 && numel > kMaxElements / d.get<std::int64_t>())) {
      throw UserError(at + ": shape " + describeJson(j["shape"]) + " is not a list of sizes with " +
                      "at most 2^40 elements in all");
    }
    t.shape.push_back(d.get<std::int64_t>());
    numel *= t.shape.back();
  }
  return t;
}

}  // namespace

const nlohmann::json& manifestMember(const nlohmann::json& j, const char* key,
                                     const std::string& where) {
  return member(j, key, where);
}

std::int64_t manifestInteger(const nlohmann::json& j, const char* key, const std::string& where,
                             std::int64_t lo, std::int64_t hi) {
  return integerMember(j, key, where, lo, hi);
}

nlohmann::json countersToJson(const TrainingCounters& c) {
  return {{"step", c.step},
          {"skipped", c.skipped},
          {"next_sample", c.nextSample},
          {"loss_scale", c.lossScale},
          {"dynamic_loss_scale", c.dynamicScale},
          {"hysteresis", c.hysteresis},
          {"scaler_iteration", c.scalerIteration},
          {"last_overflow", c.lastOverflow}};
}

TrainingCounters countersFromJson(const nlohmann::json& j, const std::string& where) {
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr std::int64_t kLongMax = std::numeric_limits<long>::max();
  TrainingCounters c;
  c.step = static_cast<int>(integerMember(j, "step", where, 0, kIntMax));
  c.skipped = static_cast<int>(integerMember(j, "skipped", where, 0, kIntMax));
  c.nextSample =
      integerMember(j, "next_sample", where, 0, std::numeric_limits<std::int64_t>::max());
  const nlohmann::json& scale = member(j, "loss_scale", where);
  if (!scale.is_number() || !(scale.get<double>() > 0)) {
    throw UserError(where + ": 'loss_scale' is " + describeJson(scale) +
                    ", expected a positive number");
  }
  c.lossScale = scale.get<double>();
  // Format 1 has no such key: its scaler had moved if it had counted an iteration.
  if (const auto dynamic = j.find("dynamic_loss_scale"); dynamic != j.end()) {
    if (!dynamic->is_boolean()) {
      throw UserError(where + ": 'dynamic_loss_scale' is " + describeJson(*dynamic) +
                      ", expected true or false");
    }
    c.dynamicScale = dynamic->get<bool>();
  }
  c.hysteresis = static_cast<int>(integerMember(j, "hysteresis", where, 0, kIntMax));
  c.scalerIteration = static_cast<long>(integerMember(j, "scaler_iteration", where, 0, kLongMax));
  c.lastOverflow = static_cast<long>(integerMember(j, "last_overflow", where, -1, kLongMax));
  if (!j.contains("dynamic_loss_scale")) c.dynamicScale = c.scalerIteration > 0;
  return c;
}

nlohmann::json manifestToJson(const CheckpointManifest& m) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const LogicalTensor& t : m.tensors) {
    tensors.push_back({{"name", t.name}, {"dtype", "F32"}, {"shape", t.shape}});
  }
  nlohmann::json files = nlohmann::json::array();
  for (const CheckpointFile& f : m.files) {
    files.push_back({{"name", f.name}, {"crc32", f.crc32}, {"bytes", f.bytes}});
  }
  nlohmann::json slices = nlohmann::json::array();
  for (const CheckpointSlice& s : m.slices) {
    slices.push_back({{"tensor", s.tensor},
                      {"field", stateFieldName(s.field)},
                      {"begin", s.begin},
                      {"count", s.count},
                      {"file", s.file},
                      {"offset", s.offset},
                      {"bytes", s.bytes},
                      {"crc32", s.crc32}});
  }
  nlohmann::json j = {{"format_version", m.formatVersion},
                      {"config", m.config},
                      {"counters", countersToJson(m.counters)},
                      {"tensors", tensors},
                      {"files", files},
                      {"slices", slices}};
  j[kManifestChecksum] = documentChecksum(j);
  return j;
}

CheckpointManifest manifestFromJson(const nlohmann::json& j, const std::string& where) {
  CheckpointManifest m;
  if (j.is_object() && j.contains("tables")) {
    throw UserError(where +
                    ": a parameter-server checkpoint (word2vec's sharded tables, "
                    "docs/parameter_server.md), not a model's: continue it with `train --load` and "
                    "a word2vec config");
  }
  m.formatVersion = static_cast<int>(
      integerMember(j, "format_version", where, 0, std::numeric_limits<int>::max()));
  if (m.formatVersion != 1 && m.formatVersion != kCheckpointFormatVersion) {
    throw UserError(where + ": format_version " + std::to_string(m.formatVersion) +
                    " is not supported (supported: 1, " + std::to_string(kCheckpointFormatVersion) +
                    ")");
  }
  const bool checksummed = m.formatVersion >= 2;
  if (checksummed) {
    const auto recorded =
        static_cast<std::uint32_t>(integerMember(j, kManifestChecksum, where, 0, 0xffffffff));
    nlohmann::json rest = j;
    rest.erase(kManifestChecksum);
    if (const std::uint32_t actual = documentChecksum(rest); actual != recorded) {
      char message[160];
      std::snprintf(message, sizeof message,
                    ": its contents have CRC32 %08x, its '%s' says %08x (an edited or corrupted "
                    "manifest)",
                    actual, kManifestChecksum, recorded);
      throw UserError(where + message);
    }
  }
  m.config = member(j, "config", where);
  m.counters = countersFromJson(member(j, "counters", where), where + ": counters");
  std::size_t i = 0;
  for (const nlohmann::json& t : arrayMember(j, "tensors", where)) {
    m.tensors.push_back(tensorFromJson(t, where + ": tensors[" + std::to_string(i++) + "]"));
  }
  i = 0;
  for (const nlohmann::json& f : arrayMember(j, "files", where)) {
    const std::string at = where + ": files[" + std::to_string(i++) + "]";
    m.files.push_back({stringMember(f, "name", at),
                       static_cast<std::uint32_t>(integerMember(f, "crc32", at, 0, 0xffffffff)),
                       integerMember(f, "bytes", at, 0, std::numeric_limits<std::int64_t>::max())});
  }
  i = 0;
  for (const nlohmann::json& s : arrayMember(j, "slices", where)) {
    const std::string at = where + ": slices[" + std::to_string(i++) + "]";
    CheckpointSlice c;
    c.tensor = stringMember(s, "tensor", at);
    c.field = parseField(stringMember(s, "field", at), at);
    c.begin = integerMember(s, "begin", at, 0, kMaxElements);
    c.count = integerMember(s, "count", at, 1, kMaxElements);
    c.file = stringMember(s, "file", at);
    c.offset = integerMember(s, "offset", at, 0, std::numeric_limits<std::int64_t>::max() / 2);
    c.bytes = integerMember(s, "bytes", at, 0, std::numeric_limits<std::int64_t>::max() / 2);
    if (checksummed)
      c.crc32 = static_cast<std::uint32_t>(integerMember(s, "crc32", at, 0, 0xffffffff));
    m.slices.push_back(std::move(c));
  }
  return m;
}

void addShard(CheckpointManifest& manifest, const ShardWritten& shard) {
  manifest.files.push_back(shard.file);
  manifest.slices.insert(manifest.slices.end(), shard.slices.begin(), shard.slices.end());
}

std::string stepDirectoryName(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08d", step);
  return name;
}

int parseStepDirectoryName(std::string_view name) {
  constexpr std::string_view kStep = "step-";
  if (name.size() < kStep.size() + 8 || name.size() > kStep.size() + 10 ||
      !name.starts_with(kStep) ||
      name.find_first_not_of("0123456789", kStep.size()) != std::string_view::npos) {
    return -1;
  }
  std::int64_t step = 0;
  for (const char c : name.substr(kStep.size())) step = step * 10 + (c - '0');
  // One name per step: "step-000000042" is not step 42's.
  if (step > std::numeric_limits<int>::max() || stepDirectoryName(static_cast<int>(step)) != name) {
    return -1;
  }
  return static_cast<int>(step);
}

std::string stagingDirectory(const std::string& dir, int step) {
  return (fs::path(dir) / (kStagingPrefix + stepDirectoryName(step))).string();
}

CheckpointLock::CheckpointLock(const std::string& dir) {
  createCheckpointDirectory(dir);
  const std::string path = (fs::path(dir) / kLockName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw UserError("checkpoint directory '" + dir + "': cannot open its lock '" + path +
                    "': " + std::strerror(errno));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    char holder[256] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who(holder, static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    while (!who.empty() && (who.back() == '\n' || who.back() == '\0')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (saved == EWOULDBLOCK) {
      throw UserError("checkpoint directory '" + dir + "': another run is saving into it (" +
                      (who.empty() ? std::string("its process unknown") : clipForMessage(who)) +
                      "); wait for it to end or save elsewhere");
    }
    throw UserError("checkpoint directory '" + dir + "': cannot lock '" + path +
                    "': " + std::strerror(saved));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = "process " + std::to_string(::getpid()) + " on " + host + "\n";
  // Only a refusal's message reads it: a failed write leaves the lock held, its holder unnamed.
  if (::ftruncate(fd_, 0) == 0) (void)::pwrite(fd_, who.data(), who.size(), 0);
}

CheckpointLock::~CheckpointLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void prepareCheckpoint(const std::string& dir, int step) {
  createCheckpointDirectory(dir);
  std::error_code ec;
  // What this save will replace must be a save's own: the step directory and `latest`.
  const std::string name = stepDirectoryName(step);
  struct stat st {};
  if (::lstat((fs::path(dir) / name).c_str(), &st) == 0 && !isOwnDirectory(dir, name)) {
    throw UserError("checkpoint directory '" + dir + "': '" + name +
                    "' is there and is not a checkpoint ParaScope saved; move it away or save "
                    "elsewhere");
  }
  checkOutputPath((fs::path(dir) / "latest").string(), "checkpoint pointer");
  // Staging directories and pointer temporaries left by killed saves, this step's included;
  // nothing else.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string entry = e.path().filename().string();
    if (entry.starts_with(kStagingPrefix) &&
        parseStepDirectoryName(std::string_view(entry).substr(std::strlen(kStagingPrefix))) >= 0) {
      removeOwnDirectory(dir, entry);
    } else if (isPointerTemporary(entry) && e.is_regular_file(ec) && !e.is_symlink(ec)) {
      fs::remove(e.path(), ec);
    }
  }
  const std::string staging = stagingDirectory(dir, step);
  if (::mkdir(staging.c_str(), 0755) != 0) {
    throw UserError(
        "checkpoint directory '" + dir + "': cannot create '" + staging +
        "': " + std::strerror(errno) +
        (errno == EEXIST ? " (not a staging directory ParaScope made; move it away)" : ""));
  }
  const int fd = ::open((fs::path(staging) / kOwnerMark).c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) failSystem("create", (fs::path(staging) / kOwnerMark).string());
  ::close(fd);
}

void discardCheckpointStaging(const std::string& dir, int step) {
  removeOwnDirectory(dir, fs::path(stagingDirectory(dir, step)).filename().string());
}

std::string shardFileName(int rank) {
  char name[40];
  std::snprintf(name, sizeof name, "rank-%05d.safetensors", rank);
  return name;
}

ShardWritten writeShard(const std::string& staging, int rank,
                        const std::vector<StateSlice>& slices) {
  const std::string name = shardFileName(rank);
  std::vector<SafetensorsEntry> entries;
  ShardWritten out;
  for (const StateSlice& s : slices) {
    if (s.count == 0) continue;
    if (s.dtype != DType::F32 || s.count < 0 || s.begin < 0 || s.data == nullptr) {
      throw std::invalid_argument("writeShard: slice of '" + s.tensor +
                                  "' must be F32 with data and a non-negative range");
    }
    entries.push_back({s.tensor + "/" + stateFieldName(s.field) + "/" + std::to_string(s.begin),
                       DType::F32,
                       {s.count},
                       s.data});
    out.slices.push_back({s.tensor, s.field, s.begin, s.count, name, 0, s.count * 4, 0});
  }
  const std::string path = (fs::path(staging) / name).string();
  const SafetensorsWritten w =
      writeSafetensorsEntries(path, entries,
                              {{"format", "parascope-checkpoint"},
                               {"format_version", std::to_string(kCheckpointFormatVersion)},
                               {"rank", std::to_string(rank)}});
  for (std::size_t i = 0; i < out.slices.size(); ++i) {
    out.slices[i].offset = static_cast<std::int64_t>(w.offsets[i]);
    out.slices[i].crc32 = w.entryCrc32[i];
  }
  out.file = {name, w.crc32, static_cast<std::int64_t>(w.bytes)};
  return out;
}

std::string commitCheckpoint(const std::string& dir, int step, CheckpointManifest manifest,
                             int keep) {
  const std::string staging = stagingDirectory(dir, step);
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.name < b.name; });
  std::sort(manifest.slices.begin(), manifest.slices.end(),
            [](const CheckpointSlice& a, const CheckpointSlice& b) {
              return std::tie(a.tensor, a.field, a.begin) < std::tie(b.tensor, b.field, b.begin);
            });
  {
    OutputFile out((fs::path(staging) / "manifest.json").string(), "checkpoint manifest");
    const std::string text = manifestToJson(manifest).dump(1) + "\n";
    out.write(text.data(), text.size());
    out.commit();  // fsync'd and renamed
  }
  // Refuses a manifest that would not load (a shard missing, elements not covered) before it
  // replaces anything.
  const CheckpointReader check(staging);
  return publishCheckpoint(dir, step, keep);
}

std::string publishCheckpoint(const std::string& dir, int step, int keep) {
  const std::string staging = stagingDirectory(dir, step);
  syncPath(staging, true);  // the shards' and manifest's entries, before the rename publishes them

  const std::string name = stepDirectoryName(step);
  const std::string target = (fs::path(dir) / name).string();
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) {
    if (!isOwnDirectory(dir, name)) {  // put there during the save
      throw UserError("checkpoint directory '" + dir + "': '" + name +
                      "' is there and is not a checkpoint ParaScope saved; move it away or save "
                      "elsewhere");
    }
    // Swapped in one step, so `latest` never names a missing directory; the old one is then in
    // staging, removed here or by the next prepareCheckpoint.
    if (!exchangeEntries(staging, target)) {
      removeOwnDirectory(dir, name);
      renameOrFail(staging, target);
    }
    syncPath(dir, true);
    removeOwnDirectory(dir, fs::path(staging).filename().string());
  } else {
    renameOrFail(staging, target);
  }
  syncPath(dir, true);  // the step directory exists durably before `latest` names it

  {
    // A new file renamed over `latest` (fsync'd, and its directory after the rename); a link or
    // anything but a regular file there is refused, never followed.
    OutputFile latest((fs::path(dir) / "latest").string(), "checkpoint pointer");
    const std::string text = name + "\n";
    latest.write(text.data(), text.size());
    latest.commit();
  }
  pruneCheckpoints(dir, name, keep);
  return target;
}

void checkInitialWeights(const SafetensorsReader& reader,
                         const std::vector<LogicalTensor>& tensors) {
  const std::string& path = reader.path();
  const auto& stored = reader.tensors();
  for (const LogicalTensor& t : tensors) {
    const auto found = stored.find(t.name);
    if (found == stored.end()) {
      throw UserError(path + ": missing tensor '" + t.name + "' of shape " + shapeString(t.shape) +
                      " (see docs/weights.md for the model's tensors)");
    }
    const SafetensorsReader::Entry& e = found->second;
    if (e.shape != t.shape || !isFloating(e.dtype)) {
      throw UserError(path + ": tensor '" + t.name + "' is " + std::string(dtypeName(e.dtype)) +
                      " " + shapeString(e.shape) + ", expected a floating type of shape " +
                      shapeString(t.shape));
    }
  }
  for (const auto& entry : stored) {
    const std::string& name = entry.first;
    const bool known = std::any_of(tensors.begin(), tensors.end(),
                                   [&](const LogicalTensor& t) { return t.name == name; });
    if (!known) {
      throw UserError(path + ": unexpected tensor '" + clipForMessage(name, 200) +
                      "' (not a parameter of this model; see docs/weights.md for the names)");
    }
  }
}

void loadInitialWeights(const SafetensorsReader& reader, const RankState& state) {
  checkInitialWeights(reader, state.tensors);
  std::vector<float> widened;
  for (const StateSlice& s : state.slices) {
    if (s.field != StateField::Param) continue;
    if (s.dtype == DType::F32) {
      reader.readF32(s.tensor, s.begin, s.count, static_cast<float*>(s.data));
      continue;
    }
    widened.resize(static_cast<std::size_t>(s.count));
    reader.readF32(s.tensor, s.begin, s.count, widened.data());
    kernels::narrow(widened.data(), static_cast<std::uint16_t*>(s.data), s.count, s.dtype);
  }
}

}  // namespace parascope
