// parascope-cli config keys: every key a config may hold, from the key table
// (core/config/config_keys.h): its type and range, default and meaning. --markdown prints the
// tables docs/config.md shows, one per section; --json one object per key.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/common/error.h"
#include "core/config/config_keys.h"

namespace parascope::cli {

namespace {

struct ConfigKeysOptions {
  std::string section;  // empty: every section
  bool sectionGiven = false;
  bool markdown = false;
  bool json = false;
};

void run(const ConfigKeysOptions& o) {
  const std::vector<std::string> sections = configSections();
  // "top" names the top level (an empty value is refused, as for every option).
  const std::string wanted = o.section == "top" ? "" : o.section;
  if (o.sectionGiven && std::find(sections.begin(), sections.end(), wanted) == sections.end()) {
    std::string allowed;
    for (const std::string& s : sections)
      allowed += (allowed.empty() ? "\"" : ", \"") + (s.empty() ? "top" : s) + "\"";
    throw UserError("config keys: --section \"" + o.section +
                    "\" is not a section; allowed: " + allowed);
  }
  for (const std::string& section : sections) {
    if (o.sectionGiven && section != wanted) continue;
    if (o.markdown) {
      std::printf("%s%s\n", section.empty() ? "" : ("`" + section + "`\n\n").c_str(),
                  markdownTable(section).c_str());
      continue;
    }
    for (const ConfigKey& k : configKeys()) {
      if (k.section() != section) continue;
      if (o.json) {
        nlohmann::json line = {{"key", k.path},
                               {"type", typeText(k)},
                               {"default", k.fallback},
                               {"strategy", k.strategy},
                               {"help", k.help}};
        if (k.fallback.is_null()) line["derived"] = k.derived;
        std::printf("%s\n", line.dump().c_str());
      } else {
        std::printf("%-40s %-36s %s\n", k.path.c_str(), typeText(k).c_str(),
                    defaultText(k).c_str());
      }
    }
  }
}

}  // namespace

void registerConfigCommand(CLI::App& app) {
  CLI::App* config = app.add_subcommand("config", "What a training config may hold");
  config->require_subcommand(1);
  auto o = std::make_shared<ConfigKeysOptions>();
  CLI::App* keys = config->add_subcommand(
      "keys", "Every config key with its type and range, default and meaning");
  keys->add_option("--section", o->section,
                   "Only the keys directly under this block (\"top\" for the top level)")
      ->each([o](const std::string&) { o->sectionGiven = true; });
  keys->add_flag("--markdown", o->markdown, "Markdown tables, as docs/config.md shows them");
  keys->add_flag("--json", o->json, "One JSON object per key");
  keys->callback([o] { run(*o); });
}

}  // namespace parascope::cli
