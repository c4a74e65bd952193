// The workbench's settings file (QSettings: the window layout, the last session's config and the
// traces' bookmarks) is read back as input like any other. Before Qt reads it, it must be a
// regular file (a FIFO there made every start wait for a writer) of at most kSettingsMaxBytes;
// the last config is parsed under the config JSON limits (core/common/bounded_json.h) and must be
// an object, as are the bookmarks; a layout Qt cannot restore is dropped. Whatever is refused is
// dropped with one line on stderr. The bounds are listed in docs/limits.md.
#pragma once

#include <QSettings>
#include <QString>
#include <QStringList>
#include <memory>
#include <nlohmann/json.hpp>

#include "profiler/timeline/timeline_bookmarks.h"

namespace parascope::ui {

// Far above what the workbench writes: a config of at most 1 MiB and a layout of a few KiB.
inline constexpr qint64 kSettingsMaxBytes = qint64{4} << 20;

// The file QSettings reads and writes for this application (the user's, in the native format).
QString settingsPath();

// The settings, or null when the file is refused (said on stderr once a process): then nothing
// is read from it or written to it.
std::unique_ptr<QSettings> openSettings();

// The last session's config: null when there is none, or when it is refused (said on stderr, and
// removed from the file).
nlohmann::json readLastDocument();
void writeLastDocument(const nlohmann::json& document);

// Bookmarks saved for a set of trace files (TimelineWindow), by their absolute paths: empty
// when there are none, or when the entry is refused (said on stderr, and removed from the file).
// Writing an empty list removes the entry; at most kMaxBookmarkedTraces sets are kept, the least
// recently written dropped first.
inline constexpr int kMaxBookmarkedTraces = 64;
profiler::BookmarkList readBookmarks(const QStringList& traces);
void writeBookmarks(const QStringList& traces, const profiler::BookmarkList& bookmarks);

// Prints "parascope: <what>" on stderr, control characters escaped.
void sayDropped(const std::string& what);

}  // namespace parascope::ui
