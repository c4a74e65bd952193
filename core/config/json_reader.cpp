#include "core/config/json_reader.h"

#include <stdexcept>

#include "core/common/bounded_json.h"
#include "core/common/error.h"

namespace parascope {

namespace {
const nlohmann::json& emptyObject() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

std::string typeName(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}
}  // namespace

JsonReader::JsonReader(const nlohmann::json& object, std::string path)
    : object_(object.is_object() ? object : emptyObject()), path_(std::move(path)) {
  if (!object.is_object() && !object.is_null()) {
    throw UserError("config: " + (path_.empty() ? std::string("the file") : path_) +
                    " must be a JSON object, got " + typeName(object));
  }
}

std::string JsonReader::keyPath(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& what) const {
  throw UserError("config: " + keyPath(key) + " " + what);
}

bool JsonReader::has(const std::string& key) const {
  return object_.contains(key);
}

const nlohmann::json* JsonReader::find(const std::string& key) {
  read_.insert(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

std::int64_t JsonReader::integer(const std::string& key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) {
    fail(key, "must be an integer in " + std::to_string(min) + ".." + std::to_string(max) +
                  ", got " + typeName(*v) + " (" + describeJson(*v) + ")");
  }
  // Beyond int64 (e.g. 2^64 - 1) is out of any allowed range; never clamped.
  const bool huge = v->is_number_unsigned() && v->get<std::uint64_t>() > INT64_MAX;
  const std::int64_t x = huge ? 0 : v->get<std::int64_t>();
  if (huge || x < min || x > max) {
    fail(key, "= " + describeJson(*v) + " is out of range; allowed " + std::to_string(min) + ".." +
                  std::to_string(max));
  }
  return x;
}

const ConfigKey& JsonReader::row(const std::string& key, KeyType type) const {
  const ConfigKey& k = configKey(keyPath(key));
  if (k.type != type)
    throw std::logic_error("config key '" + k.path + "' is read as another type than its row's");
  return k;
}

std::int64_t JsonReader::integer(const std::string& key) {
  const ConfigKey& k = row(key, KeyType::Integer);
  return integer(key, k.fallback.get<std::int64_t>(), k.intMin, k.intMax);
}

std::int64_t JsonReader::integer(const std::string& key, std::int64_t fallback) {
  const ConfigKey& k = row(key, KeyType::Integer);
  return integer(key, fallback, k.intMin, k.intMax);
}

double JsonReader::number(const std::string& key) {
  const ConfigKey& k = row(key, KeyType::Number);
  return number(key, k.fallback.get<double>(), k.min, k.max);
}

double JsonReader::number(const std::string& key, double fallback, double min, double max) {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) {
    fail(key, "must be a number in [" + nlohmann::json(min).dump() + ", " +
                  nlohmann::json(max).dump() + "], got " + typeName(*v) + " (" + describeJson(*v) +
                  ")");
  }
  const double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    fail(key, "= " + describeJson(*v) + " is out of range; allowed [" + nlohmann::json(min).dump() +
                  ", " + nlohmann::json(max).dump() + "]");
  }
  return x;
}

bool JsonReader::boolean(const std::string& key) {
  const bool fallback = row(key, KeyType::Boolean).fallback.get<bool>();
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean())
    fail(key, "must be true or false, got " + typeName(*v) + " (" + describeJson(*v) + ")");
  return v->get<bool>();
}

std::string JsonReader::string(const std::string& key) {
  return string(key, row(key, KeyType::String).fallback.get<std::string>());
}

std::string JsonReader::string(const std::string& key, const std::string& fallback) {
  if (const KeyType t = configKey(keyPath(key)).type; t != KeyType::String && t != KeyType::Layout)
    throw std::logic_error("config key '" + keyPath(key) + "' is read as a string");
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string())
    fail(key, "must be a string, got " + typeName(*v) + " (" + describeJson(*v) + ")");
  return v->get<std::string>();
}

std::string JsonReader::choice(const std::string& key) {
  const ConfigKey& k = row(key, KeyType::Choice);
  return choice(key, k.fallback.get<std::string>(), k.choices);
}

std::string JsonReader::choice(const std::string& key, const std::string& fallback) {
  return choice(key, fallback, row(key, KeyType::Choice).choices);
}

std::string JsonReader::choice(const std::string& key, const std::string& fallback,
                               const std::vector<std::string>& allowed) {
  const nlohmann::json* v = find(key);
  if (v != nullptr && !v->is_string())
    fail(key, "must be a string, got " + typeName(*v) + " (" + describeJson(*v) + ")");
  const std::string s = v == nullptr ? fallback : v->get<std::string>();
  for (const auto& a : allowed) {
    if (a == s) return s;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "= \"" + clipForMessage(s) + "\" is not supported; allowed: " + list);
}

std::vector<double> JsonReader::numbers(const std::string& key) {
  const ConfigKey& k = row(key, KeyType::Numbers);
  const std::size_t count = k.count;
  const double min = k.min, max = k.max;
  const nlohmann::json* v = find(key);
  if (v == nullptr) return k.fallback.get<std::vector<double>>();
  const std::string want = "must be an array of " + std::to_string(count) + " numbers in [" +
                           nlohmann::json(min).dump() + ", " + nlohmann::json(max).dump() + "]";
  if (!v->is_array() || v->size() != count) fail(key, want + ", got " + describeJson(*v));
  std::vector<double> out;
  for (const auto& e : *v) {
    if (!e.is_number() || !(e.get<double>() >= min && e.get<double>() <= max)) {
      fail(key, want + ", got " + describeJson(*v));
    }
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<std::int64_t> JsonReader::integers(const std::string& key) {
  const ConfigKey& k = configKey(keyPath(key));
  if (k.type != KeyType::Integers && k.type != KeyType::Layout)
    throw std::logic_error("config key '" + k.path + "' is read as an array of integers");
  const std::size_t maxCount = k.count;
  const std::int64_t min = k.intMin, max = k.intMax;
  const nlohmann::json* v = find(key);
  if (v == nullptr)
    return k.fallback.is_null() ? std::vector<std::int64_t>{}
                                : k.fallback.get<std::vector<std::int64_t>>();
  const std::string want = "must be an array of at most " + std::to_string(maxCount) +
                           " integers in " + std::to_string(min) + ".." + std::to_string(max);
  if (!v->is_array() || v->size() > maxCount) fail(key, want + ", got " + describeJson(*v));
  std::vector<std::int64_t> out;
  for (const auto& e : *v) {
    const bool huge = e.is_number_unsigned() && e.get<std::uint64_t>() > INT64_MAX;
    if (!e.is_number_integer() || huge || e.get<std::int64_t>() < min ||
        e.get<std::int64_t>() > max) {
      fail(key, want + ", got " + describeJson(*v));
    }
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

JsonReader JsonReader::object(const std::string& key) {
  row(key, KeyType::Object);
  const nlohmann::json* v = find(key);
  if (v == nullptr) return JsonReader(emptyObject(), keyPath(key));
  if (!v->is_object())
    fail(key, "must be an object, got " + typeName(*v) + " (" + describeJson(*v) + ")");
  return JsonReader(*v, keyPath(key));
}

void JsonReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (read_.count(it.key()) == 0) {
      std::string allowed;
      for (const auto& k : read_) allowed += (allowed.empty() ? "" : ", ") + k;
      throw UserError("config: unknown key '" + clipForMessage(keyPath(it.key()), 120) + "'" +
                      (allowed.empty() ? std::string(" (this object takes no keys)")
                                       : "; allowed here: " + allowed));
    }
  }
}

}  // namespace parascope
