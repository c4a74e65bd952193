// The activity source of a build without CUPTI: it never starts, and says why.
#include "profiler/cupti/activity_source.h"

namespace parascope::profiler {

namespace {
class NoCuptiSource final : public ActivitySource {
 public:
  bool start(std::string* whyNot) override {
    *whyNot = "this build of ParaScope has no CUPTI";
    return false;
  }
  void flush(const std::function<void(const ActivityRecord&)>&) override {}
  void stop() override {}
  void pushExternalId(std::uint64_t) override {}
  void popExternalId() override {}
};
}  // namespace

std::unique_ptr<ActivitySource> makeCuptiActivitySource() {
  return std::make_unique<NoCuptiSource>();
}

}  // namespace parascope::profiler
