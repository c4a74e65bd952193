// Moved to core/config/config.h (the configuration module); kept while callers move over.
#pragma once

#include "core/config/config.h"
