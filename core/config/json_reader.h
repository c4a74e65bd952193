// Strict reading of JSON configs: every key is looked up with its type, range and default from
// the key table (config_keys.h), and finish() refuses keys nobody asked for. Errors are UserErrors
// naming the full key path, the value (cut to a short prefix) and what is allowed, e.g. "config:
// model.num_layers = 0 is out of range; allowed 1..1024". Documents come from parseBoundedJson
// (core/common/bounded_json.h).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config_keys.h"

namespace parascope {

class JsonReader {
 public:
  // path: the dotted prefix of this object within the file ("" at the top level).
  JsonReader(const nlohmann::json& object, std::string path);

  bool has(const std::string& key) const;
  // Each key is read with its row in the key table (config_keys.h): its type, range and
  // default. The overloads taking `fallback` are for keys whose default other keys decide.
  std::int64_t integer(const std::string& key);
  std::int64_t integer(const std::string& key, std::int64_t fallback);
  double number(const std::string& key);
  bool boolean(const std::string& key);
  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);
  // One of the key's choices.
  std::string choice(const std::string& key);
  std::string choice(const std::string& key, const std::string& fallback);
  std::vector<double> numbers(const std::string& key);
  // Integers and Layout keys: an array of at most the key's count, each in its range.
  std::vector<std::int64_t> integers(const std::string& key);
  // A nested object (an empty one if the key is absent).
  JsonReader object(const std::string& key);

  // Throws naming the first key that was never read.
  void finish() const;
  std::string keyPath(const std::string& key) const;

 private:
  // The key's row, which must be of `type` (a mismatch is a programming error).
  const ConfigKey& row(const std::string& key, KeyType type) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max);
  double number(const std::string& key, double fallback, double min, double max);
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed);
  const nlohmann::json* find(const std::string& key);
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string> read_;
};

}  // namespace parascope
