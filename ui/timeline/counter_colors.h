// Colours of counter tracks, shared by the timeline's counter rows and the Memory view's stacked
// areas so that a memory category looks the same in both. The engine's memory categories
// (core/tensor/allocator.h: parameter, gradient, ..., and the swap files' nvme) have fixed colours;
// any other counter (an imported trace's) takes a palette colour by its slot, which the caller
// keeps stable.
#pragma once

#include <QColor>
#include <cstddef>
#include <string_view>

namespace parascope::ui {

// The disk's: its I/O spans and the swap files' "nvme" counter.
inline QColor diskColor() {
  return {0xb6, 0x99, 0x2d};
}

// `slot`: for a name that is not a memory category, which palette colour (modulo its size).
QColor counterColor(std::string_view name, std::size_t slot);

}  // namespace parascope::ui
