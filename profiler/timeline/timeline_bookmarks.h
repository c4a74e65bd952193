// Bookmarks of a timeline: named times a user marks to come back to (Nsight Systems' bookmarks,
// Perfetto's flags), kept in time order and saved with the trace files they mark
// (TimelineWindow). No Qt here: the list, its checks and its JSON form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace parascope::profiler {

struct Bookmark {
  std::int64_t ns = 0;  // on the trace's clock, as its events
  std::string name;
};

// Far above what a user marks by hand, and small enough that the settings file holding the
// bookmarks of many traces stays within its bound (docs/limits.md).
inline constexpr std::size_t kMaxBookmarks = 200;
inline constexpr std::size_t kMaxBookmarkNameBytes = 100;

class BookmarkList {
 public:
  // Adds a bookmark at `ns`, after any already there, and returns its place. An empty name
  // becomes "Bookmark N", N counting the bookmarks this list has held. Throws UserError, changing
  // nothing, for the kMaxBookmarks+1-th or a name that checkName refuses.
  std::size_t add(std::int64_t ns, std::string name);
  void rename(std::size_t i, std::string name);  // the same checks; i < size()
  void remove(std::size_t i);                    // i < size()

  const std::vector<Bookmark>& all() const { return marks_; }
  std::size_t size() const { return marks_.size(); }
  bool empty() const { return marks_.empty(); }
  // The nearest bookmark strictly after `ns` (direction > 0) or strictly before it (< 0).
  std::optional<std::size_t> next(std::int64_t ns, int direction) const;

  // [{"time_ns": <int>, "name": "<text>"}, ...] in time order.
  nlohmann::json toJson() const;
  // toJson's form back, as input: UserError starting with `what`, naming the entry and what is
  // allowed (an array of at most kMaxBookmarks objects with exactly those two keys).
  static BookmarkList fromJson(const nlohmann::json& j, const std::string& what);

  // Empty when `name` may name a bookmark; otherwise why not (too long, not UTF-8, a control
  // character).
  static std::string checkName(const std::string& name);

 private:
  std::vector<Bookmark> marks_;
  std::size_t made_ = 0;  // bookmarks added so far, for the default names
};

}  // namespace parascope::profiler
