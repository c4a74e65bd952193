// Moved to core/config/pipeline_config.h; kept while callers move over.
#pragma once

#include "core/config/pipeline_config.h"
