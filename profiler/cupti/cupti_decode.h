// Decoding of raw CUPTI activity records (the structs of the CUDA toolkit's cupti_activity.h)
// into ActivityRecord. Built only where CUPTI is found; split from the source so tests can
// decode hand-made records without a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>

#include "profiler/cupti/activity_source.h"

namespace parascope::profiler {

// False for kinds the profiler does not use. `offsetNs` moves CUPTI's clock onto steady ns.
bool decodeCuptiRecord(const CUpti_Activity* record, std::int64_t offsetNs, ActivityRecord* out);

}  // namespace parascope::profiler
