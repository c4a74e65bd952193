#include "ui/timeline/counter_colors.h"

#include <array>
#include <iterator>
#include <utility>

namespace parascope::ui {

QColor counterColor(std::string_view name, std::size_t slot) {
  // Model state in cool colours (it barely moves), the per-step swings in warm ones.
  static const std::array<std::pair<std::string_view, QColor>, 8> kCategories = {{
      {"parameter", QColor(0x4e, 0x79, 0xa7)},
      {"gradient", QColor(0x76, 0xb7, 0xb2)},
      {"optimizer_state", QColor(0x59, 0xa1, 0x4f)},
      {"activation", QColor(0xff, 0x9d, 0xa7)},
      {"communication_buffer", QColor(0xe1, 0x57, 0x59)},
      {"workspace", QColor(0xf2, 0x8e, 0x2b)},
      {"data", QColor(0xed, 0xc9, 0x48)},
      {"nvme", diskColor()},
  }};
  for (const auto& [category, color] : kCategories) {
    if (category == name) return color;
  }
  // The rest of the palette, so an imported counter never looks like a memory category.
  static const QColor kOthers[] = {QColor(0xaf, 0x7a, 0xd6), QColor(0x9c, 0x75, 0x5f),
                                   QColor(0x86, 0xbc, 0xb6), QColor(0xd3, 0x72, 0x95),
                                   QColor(0x8c, 0xd1, 0x7d), QColor(0xba, 0xb0, 0xac)};
  return kOthers[slot % std::size(kOthers)];
}

}  // namespace parascope::ui
