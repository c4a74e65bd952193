// The config document before validation: the file, read under the JSON limits, and the
// command line's key.path=value overrides applied to it.
#include <algorithm>
#include <optional>
#include <string>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/config/config.h"

namespace parascope {

nlohmann::json readJsonFile(const std::string& path) {
  const std::string text = readBoundedFile(path, kConfigJsonLimits.maxBytes, "config file");
  nlohmann::json doc = parseBoundedJson(text, path, kConfigJsonLimits);
  if (!doc.is_object()) {
    // Overrides and every key lookup need an object; refuse anything else before them.
    throw UserError("config: the file must be a JSON object, got " +
                    std::string(doc.is_array()     ? "an array"
                                : doc.is_null()    ? "null"
                                : doc.is_string()  ? "a string"
                                : doc.is_boolean() ? "a boolean"
                                                   : "a number"));
  }
  return doc;
}

void applyOverride(nlohmann::json& j, const std::string& assignment) {
  const std::string shown = clipForMessage(assignment, 120);
  if (assignment.size() > kConfigJsonLimits.maxBytes) {
    throw UserError("override '" + shown + "' is longer than the " +
                    std::to_string(kConfigJsonLimits.maxBytes) + "-byte limit");
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError("override '" + shown + "' must look like key.path=value");
  }
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  if (std::count(path.begin(), path.end(), '.') >= kConfigJsonLimits.maxDepth) {
    throw UserError("override '" + shown + "': the key is nested deeper than " +
                    std::to_string(kConfigJsonLimits.maxDepth) + " levels");
  }
  // Not JSON at all: the text is the value, as a string (which, as every JSON string, must be
  // UTF-8, or nothing could print it back). JSON beyond the limits is refused.
  std::optional<nlohmann::json> parsed =
      parseBoundedJsonIfJson(text, "config", kConfigJsonLimits, path);
  if (!parsed) {
    try {
      (void)nlohmann::json(text).dump();
    } catch (const nlohmann::json::type_error&) {
      throw UserError("override '" + clipForMessage(path, 120) + "=...' is not valid UTF-8");
    }
  }
  setConfigValue(j, path, parsed ? std::move(*parsed) : nlohmann::json(text),
                 "override '" + shown + "'");
}

void setConfigValue(nlohmann::json& document, const std::string& path, nlohmann::json value,
                    const std::string& what) {
  nlohmann::json* node = &document;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot - start);
    if (key.empty()) throw UserError(what + " has an empty key");
    if (!node->is_object()) {
      throw UserError(what + ": '" + clipForMessage(path.substr(0, start - 1)) +
                      "' is not an object");
    }
    if (dot == std::string::npos) {
      (*node)[key] = std::move(value);
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

}  // namespace parascope
