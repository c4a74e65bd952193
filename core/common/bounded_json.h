// The one policy for every JSON document the engine reads from a user (configs, command-line
// overrides, safetensors headers): a size limit checked before reading, a nesting limit checked
// while parsing (nlohmann's parser is iterative; the limit keeps later recursive walks such as
// dump() shallow), duplicate keys refused by name, numbers beyond a double refused with their
// key, and values echoed in messages cut to a short prefix. Limits are listed in docs/limits.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace parascope {

struct JsonLimits {
  std::size_t maxBytes;
  int maxDepth;  // arrays and objects nested inside each other, the outermost counting 1
};

// Configs and their overrides.
inline constexpr JsonLimits kConfigJsonLimits{std::size_t{1} << 20, 32};
// Safetensors headers: the reference implementation's 100 MiB; tensors nest 3 levels.
inline constexpr JsonLimits kSafetensorsJsonLimits{std::size_t{100} << 20, 8};

// Parses `text` as one JSON document. Every failure is a UserError starting with `what`:
// malformed (with line and column), nested too deep, a duplicate key, a number out of range
// (each naming the key path, below `rootPath` when the document is the value of a key), or
// larger than the limit.
nlohmann::json parseBoundedJson(std::string_view text, const std::string& what,
                                const JsonLimits& limits, const std::string& rootPath = "");

// As parseBoundedJson, but returns nullopt when `text` is not JSON at all (a syntax error);
// limit violations still throw. For values that may be plain strings (overrides).
std::optional<nlohmann::json> parseBoundedJsonIfJson(std::string_view text, const std::string& what,
                                                     const JsonLimits& limits,
                                                     const std::string& rootPath = "");

// Reads a whole regular file of at most maxBytes. Directories, devices, FIFOs and sockets are
// refused before any byte is read (opening never blocks), as are larger files; UserError
// "<path>: ..." with `kind` naming what the file was meant to be ("config file").
std::string readBoundedFile(const std::string& path, std::size_t maxBytes, const std::string& kind);

// At most maxChars of `text` for a message, with "... (N bytes)" when cut.
std::string clipForMessage(std::string_view text, std::size_t maxChars = 64);

// A JSON value as text for a message: at most maxChars, written without recursion, so any
// value (however deep or large) costs O(maxChars) to describe.
std::string describeJson(const nlohmann::json& value, std::size_t maxChars = 64);

}  // namespace parascope
