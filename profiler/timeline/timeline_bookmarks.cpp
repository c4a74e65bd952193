// BookmarkList; see timeline_bookmarks.h.
#include "profiler/timeline/timeline_bookmarks.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/printable.h"

namespace parascope::profiler {

std::string BookmarkList::checkName(const std::string& name) {
  if (name.size() > kMaxBookmarkNameBytes) {
    return "a name of " + std::to_string(name.size()) + " bytes, more than the " +
           std::to_string(kMaxBookmarkNameBytes) + " a bookmark's name may have";
  }
  if (!isValidUtf8(name)) return "a name that is not UTF-8 text";
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "a name with a control character (tab, newline, ...)";
  }
  return "";
}

std::size_t BookmarkList::add(std::int64_t ns, std::string name) {
  if (marks_.size() >= kMaxBookmarks) {
    throw UserError("bookmark: this trace has " + std::to_string(marks_.size()) +
                    " bookmarks, the most it may have; remove one first");
  }
  if (name.empty()) name = "Bookmark " + std::to_string(made_ + 1);
  if (const std::string problem = checkName(name); !problem.empty()) {
    throw UserError("bookmark: " + problem);
  }
  const auto at = std::upper_bound(marks_.begin(), marks_.end(), ns,
                                   [](std::int64_t t, const Bookmark& b) { return t < b.ns; });
  const auto place = static_cast<std::size_t>(at - marks_.begin());
  marks_.insert(at, Bookmark{ns, std::move(name)});
  ++made_;
  return place;
}

void BookmarkList::rename(std::size_t i, std::string name) {
  if (const std::string problem = checkName(name); !problem.empty()) {
    throw UserError("bookmark: " + problem);
  }
  if (name.empty()) throw UserError("bookmark: an empty name; give it at least one character");
  marks_.at(i).name = std::move(name);
}

void BookmarkList::remove(std::size_t i) {
  marks_.erase(marks_.begin() + static_cast<std::ptrdiff_t>(i));
}

std::optional<std::size_t> BookmarkList::next(std::int64_t ns, int direction) const {
  if (direction > 0) {
    const auto it = std::upper_bound(marks_.begin(), marks_.end(), ns,
                                     [](std::int64_t t, const Bookmark& b) { return t < b.ns; });
    if (it == marks_.end()) return std::nullopt;
    return static_cast<std::size_t>(it - marks_.begin());
  }
  const auto it = std::lower_bound(marks_.begin(), marks_.end(), ns,
                                   [](const Bookmark& b, std::int64_t t) { return b.ns < t; });
  if (it == marks_.begin()) return std::nullopt;
  return static_cast<std::size_t>(it - marks_.begin()) - 1;
}

nlohmann::json BookmarkList::toJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Bookmark& b : marks_) out.push_back({{"time_ns", b.ns}, {"name", b.name}});
  return out;
}

BookmarkList BookmarkList::fromJson(const nlohmann::json& j, const std::string& what) {
  if (!j.is_array()) throw UserError(what + ": not a JSON array of bookmarks");
  if (j.size() > kMaxBookmarks) {
    throw UserError(what + ": " + std::to_string(j.size()) + " bookmarks, more than the " +
                    std::to_string(kMaxBookmarks) + " a trace may have");
  }
  BookmarkList list;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& e = j[i];
    const std::string where = what + ": bookmark " + std::to_string(i);
    const auto field = [&](const char* key) -> const nlohmann::json& {
      const auto it = e.find(key);
      if (it == e.end()) throw UserError(where + " has no \"" + key + "\"");
      return *it;
    };
    if (!e.is_object() || e.size() != 2) {
      throw UserError(where + ": not an object of exactly \"time_ns\" and \"name\"");
    }
    const nlohmann::json& ns = field("time_ns");
    const nlohmann::json& name = field("name");
    if (!ns.is_number_integer() ||
        (ns.is_number_unsigned() &&
         ns.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
      throw UserError(where + ": \"time_ns\" must be an integer of nanoseconds within +-2^63");
    }
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      throw UserError(where + ": \"name\" must be a non-empty string");
    }
    if (const std::string problem = checkName(name.get<std::string>()); !problem.empty()) {
      throw UserError(where + ": " + problem);
    }
    list.add(ns.get<std::int64_t>(), name.get<std::string>());
  }
  return list;
}

}  // namespace parascope::profiler
