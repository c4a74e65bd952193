// The workbench's settings; see workbench_settings.h.
#include "ui/workbench/workbench_settings.h"

#include <sys/stat.h>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/printable.h"

namespace parascope::ui {

namespace {

const QString kLastConfig = QStringLiteral("session/lastConfig");

// Empty when Qt may read `path` (absent, or a regular file within the bound); otherwise why not.
std::string fileProblem(const QString& path) {
  struct stat st {};
  if (::stat(path.toLocal8Bit().constData(), &st) != 0) {
    return errno == ENOENT ? "" : std::string("cannot inspect it: ") + std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return "is a directory, not a settings file";
  if (!S_ISREG(st.st_mode)) return "is a device, FIFO or socket, not a settings file";
  if (st.st_size > kSettingsMaxBytes) {
    return std::to_string(st.st_size) + " bytes, more than the " +
           std::to_string(kSettingsMaxBytes) + "-byte limit for a settings file";
  }
  return "";
}

}  // namespace

void sayDropped(const std::string& what) {
  std::fprintf(stderr, "parascope: %s\n", printableText(what).c_str());
}

QString settingsPath() {
  // Qt's documented place for QSettings::NativeFormat, user scope, on Unix.
  return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
         QLatin1Char('/') + QCoreApplication::organizationName() + QLatin1Char('/') +
         QCoreApplication::applicationName() + QStringLiteral(".conf");
}

std::unique_ptr<QSettings> openSettings() {
  const QString path = settingsPath();
  if (const std::string problem = fileProblem(path); !problem.empty()) {
    static bool said = false;
    if (!said) {
      sayDropped("settings file '" + path.toStdString() + "': " + problem +
                 "; the saved layout and last config are not used");
    }
    said = true;
    return nullptr;
  }
  auto settings = std::make_unique<QSettings>(path, QSettings::NativeFormat);
  // Only the user's own file: the system-wide ones under /etc/xdg are not checked above.
  settings->setFallbacksEnabled(false);
  return settings;
}

nlohmann::json readLastDocument() {
  const std::unique_ptr<QSettings> settings = openSettings();
  if (!settings || !settings->contains(kLastConfig)) return nullptr;
  const std::string what =
      "the last session's config in '" + settings->fileName().toStdString() + "'";
  try {
    nlohmann::json document = parseBoundedJson(
        settings->value(kLastConfig).toString().toStdString(), what, kConfigJsonLimits);
    if (!document.is_object()) throw UserError(what + ": not a JSON object");
    return document;
  } catch (const UserError& e) {
    sayDropped(std::string(e.what()) + "; dropped, the default session is used");
    settings->remove(kLastConfig);
    return nullptr;
  }
}

namespace {

const QString kBookmarksGroup = QStringLiteral("bookmarks");

// The traces as saved: absolute paths, in the order given.
nlohmann::json tracePaths(const QStringList& traces) {
  nlohmann::json paths = nlohmann::json::array();
  for (const QString& t : traces) paths.push_back(QFileInfo(t).absoluteFilePath().toStdString());
  return paths;
}

// One settings key per set of traces: a digest of their paths (a path may hold any character,
// a key may not).
QString bookmarksKey(const nlohmann::json& paths) {
  const QByteArray digest =
      QCryptographicHash::hash(QByteArray::fromStdString(paths.dump()), QCryptographicHash::Sha256);
  return kBookmarksGroup + QLatin1Char('/') + QString::fromLatin1(digest.toHex());
}

// When an entry was written; -1 for one that cannot be read, which goes first.
qint64 savedMs(const QString& entry) {
  std::optional<nlohmann::json> e;
  try {
    e = parseBoundedJsonIfJson(entry.toStdString(), "bookmarks", kConfigJsonLimits);
  } catch (const UserError&) {
    return -1;  // past the JSON limits
  }
  if (e && e->is_object() && e->contains("saved_ms") && (*e)["saved_ms"].is_number_integer()) {
    return (*e)["saved_ms"].get<qint64>();
  }
  return -1;
}

}  // namespace

profiler::BookmarkList readBookmarks(const QStringList& traces) {
  const std::unique_ptr<QSettings> settings = openSettings();
  const nlohmann::json paths = tracePaths(traces);
  const QString key = bookmarksKey(paths);
  if (!settings || !settings->contains(key)) return {};
  const std::string what =
      "the bookmarks of " + paths.dump() + " in '" + settings->fileName().toStdString() + "'";
  try {
    const nlohmann::json entry =
        parseBoundedJson(settings->value(key).toString().toStdString(), what, kConfigJsonLimits);
    if (!entry.is_object() || !entry.contains("traces") || !entry.contains("bookmarks")) {
      throw UserError(what + ": not an object of \"traces\", \"saved_ms\" and \"bookmarks\"");
    }
    // Another set of traces under the same digest is not these traces' bookmarks.
    if (entry["traces"] != paths) return {};
    return profiler::BookmarkList::fromJson(entry["bookmarks"], what);
  } catch (const UserError& e) {
    sayDropped(std::string(e.what()) + "; dropped");
    settings->remove(key);
    return {};
  }
}

void writeBookmarks(const QStringList& traces, const profiler::BookmarkList& bookmarks) {
  const std::unique_ptr<QSettings> settings = openSettings();
  if (!settings) return;
  const nlohmann::json paths = tracePaths(traces);
  const QString key = bookmarksKey(paths);
  if (bookmarks.empty()) {
    settings->remove(key);
    return;
  }
  const nlohmann::json entry = {{"traces", paths},
                                {"saved_ms", QDateTime::currentMSecsSinceEpoch()},
                                {"bookmarks", bookmarks.toJson()}};
  settings->setValue(key, QString::fromStdString(entry.dump()));
  // Past the bound, the sets written longest ago go (an entry that cannot be read goes first).
  settings->beginGroup(kBookmarksGroup);
  std::vector<std::pair<qint64, QString>> written;
  for (const QString& k : settings->childKeys()) {
    written.emplace_back(savedMs(settings->value(k).toString()), k);
  }
  std::sort(written.begin(), written.end());
  for (std::size_t i = 0; i + kMaxBookmarkedTraces < written.size(); ++i) {
    settings->remove(written[i].second);
  }
  settings->endGroup();
}

void writeLastDocument(const nlohmann::json& document) {
  if (const std::unique_ptr<QSettings> settings = openSettings()) {
    settings->setValue(kLastConfig, QString::fromStdString(document.dump()));
  }
}

}  // namespace parascope::ui
