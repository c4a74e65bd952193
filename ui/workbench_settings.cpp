// The workbench's settings; see workbench_settings.h.
#include "ui/workbench_settings.h"

#include <sys/stat.h>
#include <QCoreApplication>
#include <QStandardPaths>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

void writeLastDocument(const nlohmann::json& document) {
  if (const std::unique_ptr<QSettings> settings = openSettings()) {
    settings->setValue(kLastConfig, QString::fromStdString(document.dump()));
  }
}

}  // namespace parascope::ui
