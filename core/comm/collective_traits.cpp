// Lookup by name, and the row order checked where it is written: commTraits indexes by CommOp.
#include "core/comm/collective_traits.h"

namespace parascope {
namespace {

constexpr bool rowsInOpOrder() {
  for (std::size_t i = 0; i < std::size(kCollectiveTraits); ++i)
    if (kCollectiveTraits[i].op != static_cast<CommOp>(i)) return false;
  return true;
}
static_assert(rowsInOpOrder(), "kCollectiveTraits rows must be in CommOp order");

}  // namespace

std::optional<CommOp> commOpNamed(std::string_view name) {
  for (const CollectiveTraits& t : kCollectiveTraits)
    if (t.name == name) return t.op;
  return std::nullopt;
}

}  // namespace parascope
