// Checkpoints on disk: a directory per saved step holding one safetensors file per rank with that
// rank's slices of the training state (training_state.h), and manifest.json describing all of
// them. Written to a staging directory, fsync'd, renamed into place; the `latest` pointer is
// replaced (write, fsync, rename) only after that, so a process killed at any moment leaves the
// previous checkpoint loadable. docs/checkpoints.md has the format.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/bounded_json.h"
#include "core/io/safetensors.h"
#include "core/state/training_state.h"

namespace parascope {

// 2: each slice's CRC-32 (checked as a load reads it) and the manifest's own; 1 (still read):
// only each file's, checked over the whole file before a load reads from it.
inline constexpr int kCheckpointFormatVersion = 2;
// manifest.json: a slice entry is ~150 bytes, so 256 MiB is over a million slices; the config
// nests within kConfigJsonLimits one level down.
inline constexpr JsonLimits kManifestJsonLimits{std::size_t{256} << 20, 40};

struct CheckpointFile {
  std::string name;         // relative to the checkpoint directory, e.g. "rank-00003.safetensors"
  std::uint32_t crc32 = 0;  // of the whole file (zlib)
  std::int64_t bytes = 0;
};

struct CheckpointSlice {  // one stored slice: always f32
  std::string tensor;
  StateField field = StateField::Param;
  std::int64_t begin = 0, count = 0;  // elements of the logical tensor
  std::string file;
  std::int64_t offset = 0;  // byte offset of its data in the file
  std::int64_t bytes = 0;   // count * 4
  std::uint32_t crc32 = 0;  // of its bytes (format 2; format 1 has none)
};

struct CheckpointManifest {
  int formatVersion = kCheckpointFormatVersion;
  nlohmann::json config;  // the TrainConfig document that produced the state
  TrainingCounters counters;
  std::vector<LogicalTensor> tensors;  // dtype f32, in model order
  std::vector<CheckpointFile> files;
  std::vector<CheckpointSlice> slices;
};

// What one rank wrote: its file and its slices' places in it.
struct ShardWritten {
  CheckpointFile file;
  std::vector<CheckpointSlice> slices;
};

// Held by the process that saves into `dir` (rank 0's) for as long as it may save there: a
// second run, or a save from another process, is refused at once, naming the one that holds it.
// An advisory lock (flock) on dir/.parascope-lock, which the system releases whatever way the
// holder ends. Creates `dir` if missing; UserError if it cannot be created or written, or is held.
class CheckpointLock {
 public:
  explicit CheckpointLock(const std::string& dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

 private:
  int fd_ = -1;
};

// Appends one rank's shard to the manifest rank 0 commits.
void addShard(CheckpointManifest& manifest, const ShardWritten& shard);

// manifest.json's document (docs/checkpoints.md). Reading checks every field's presence and type
// and throws UserError "<where>: ..." naming the field.
nlohmann::json countersToJson(const TrainingCounters& counters);
TrainingCounters countersFromJson(const nlohmann::json& j, const std::string& where);
nlohmann::json manifestToJson(const CheckpointManifest& manifest);
CheckpointManifest manifestFromJson(const nlohmann::json& j, const std::string& where);

// A manifest's own checksum: the CRC-32 of the document (without the checksum's key) as compact
// JSON, keys sorted, so it covers what the manifest says, not how its whitespace falls.
std::uint32_t jsonDocumentChecksum(const nlohmann::json& j);

// A rank's shard in a step directory: "rank-00003.safetensors" (the one name the directory
// code knows a saved shard by).
std::string shardFileName(int rank);

// Reading a manifest's members: UserError "<where>: missing 'key'" or naming the value and the
// range allowed.
const nlohmann::json& manifestMember(const nlohmann::json& j, const char* key,
                                     const std::string& where);
std::int64_t manifestInteger(const nlohmann::json& j, const char* key, const std::string& where,
                             std::int64_t lo, std::int64_t hi);

// A checkpoint file's CRC-32 and size, read 1 MiB at a time; UserError naming it when it cannot
// be read; a stop signal ends the read within a MiB.
std::uint32_t fileChecksum(const std::string& path, std::int64_t* bytes);

// The step directory `path` names: itself when it holds manifest.json, else the one its `latest`
// pointer names (checked: a step directory name, no link, a manifest there). UserError otherwise.
std::string resolveCheckpointDirectory(const std::string& path);

// The step directory's name, "step-00000042" (more digits from step 100,000,000 on).
std::string stepDirectoryName(int step);
// The step a directory name stands for, -1 if it is not exactly stepDirectoryName of one.
int parseStepDirectoryName(std::string_view name);

// The staging directory a save of `step` under `dir` writes into (created by rank 0 before any
// rank writes: prepareCheckpoint).
std::string stagingDirectory(const std::string& dir, int step);
// Rank 0, before the shards: creates `dir` if missing and an empty staging directory for `step`
// (a leftover one from a killed save is removed). Throws UserError if `dir` cannot be written.
void prepareCheckpoint(const std::string& dir, int step);
// Rank 0, when a save failed or was stopped before its commit: removes the staging directory it
// made (only a save's own), so no complete-looking copy stays behind until the next save.
void discardCheckpointStaging(const std::string& dir, int step);
// Any rank: writes `slices` (F32 data, the elements this rank is the one to save) to
// staging/rank-<rank>.safetensors, fsync'd, and returns where each slice went.
ShardWritten writeShard(const std::string& staging, int rank,
                        const std::vector<StateSlice>& slices);
// Rank 0, after every rank's shard is written: writes manifest.json (with every shard's file and
// slices), fsyncs, renames staging to dir/step-<8 digits>, updates dir/latest, and removes the
// oldest complete checkpoints beyond `keep` (0: keep all). Returns the checkpoint's directory.
std::string commitCheckpoint(const std::string& dir, int step, CheckpointManifest manifest,
                             int keep);
// The second half of a commit, for a staging directory whose shards and manifest (of any of
// ParaScope's checkpoint formats) are written and checked: fsyncs, renames it to
// dir/step-<8 digits>, updates dir/latest and prunes beyond `keep`. Returns the directory.
std::string publishCheckpoint(const std::string& dir, int step, int keep);

// Checks that the checkpoint holds exactly the tensors `expected` (a model's), with the same
// shapes; UserError naming `where`, the tensor and both shapes otherwise (another model's
// checkpoint).
void checkCheckpointTensors(const CheckpointManifest& manifest,
                            const std::vector<LogicalTensor>& expected, const std::string& where);

// Checks that a safetensors file of full logical weights (as `checkpoint export` and
// save_weights write them) holds exactly `tensors`, each floating-point of the same shape;
// UserError naming the file and the first missing, unexpected or mis-shaped tensor.
void checkInitialWeights(const SafetensorsReader& reader,
                         const std::vector<LogicalTensor>& tensors);
// Fills every parameter slice of `state` (replicas and 16-bit stored copies included) from such
// a file (f32, or bf16 / f16 widened), checked as above; AdamW's moments and the counters stay
// as they are: a run starts from the weights. Each rank reads only its slices' bytes; one reader
// (its header parsed once) serves every rank of a process.
void loadInitialWeights(const SafetensorsReader& reader, const RankState& state);

// A checkpoint opened for reading: `path` is a step directory or a directory with a `latest`
// pointer (resolved). The manifest is validated at open (format version, its own checksum, file
// names that stay in the directory, every file present with its size, every slice within its
// tensor and where its shard's header puts it, every element of every (tensor, field) covered
// exactly once); every problem is a UserError naming the file and, where there is one, the tensor.
// One reader serves every rank of a process: reading is thread-safe.
class CheckpointReader {
 public:
  // verifyOnRead: whether read() checks what it reads against the checksums (always, but for
  // measuring what that costs).
  explicit CheckpointReader(const std::string& path, bool verifyOnRead = true);
  const std::string& directory() const { return directory_; }
  const CheckpointManifest& manifest() const { return manifest_; }
  // Fills `dest` (F32, or BF16 / F16 rounded to nearest even) from the stored slices overlapping
  // it, reading only those bytes. In format 1, a file's CRC-32 is checked over the whole file
  // before the first read from it (a mismatch is a UserError naming the file); in format 2, the
  // CRC-32 of each part read is kept for finishChecks.
  void read(const StateSlice& dest) const;
  // Format 2, once every read of a load in this process has returned: checks each stored slice
  // read from against its CRC-32, joining the parts' CRCs (with no second pass over them) and
  // reading only what no read here took (another process's share). UserError naming the file and
  // the slice at the first mismatch.
  void finishChecks() const;
  // Recomputes every file's CRC32; throws UserError naming the first file that differs.
  void verifyChecksums() const;

 private:
  using Key = std::pair<std::string, StateField>;  // (tensor, field)
  // A part of a stored slice a read took (elements from the slice's start) and its bytes' CRC.
  struct Piece {
    std::int64_t begin = 0, count = 0;
    std::uint32_t crc = 0;
  };
  void checkShardHeaders() const;
  void verifyFile(const std::string& name) const;  // once per reader
  void verifyFileChecksum(const CheckpointFile& file) const;
  // The part's index in pieces_[slice], or none if a read has it already (a replica's).
  std::optional<std::size_t> claimPiece(std::size_t slice, std::int64_t begin,
                                        std::int64_t count) const;

  std::string directory_;
  bool verifyOnRead_ = true;
  CheckpointManifest manifest_;
  // Per (tensor, field): indices into manifest_.slices sorted by begin (disjoint, covering).
  std::map<Key, std::vector<std::size_t>> index_;
  std::map<std::string, std::int64_t> numel_;  // per tensor
  // Format 1, per file: claimed by the first read that checks it.
  mutable std::vector<std::atomic<bool>> checked_;
  // Format 2, per stored slice: the parts read since the last finishChecks.
  mutable std::mutex piecesMutex_;
  mutable std::map<std::size_t, std::vector<Piece>> pieces_;
};

}  // namespace parascope
