// The gpu suites' checks skip with one line where no CUDA device is visible: the runtime's reason
// and what is built but not run (`built`: "the kernels are built", say). Inside a test function:
// QSKIP returns from it.
#pragma once

#include <QtTest>

#include <string>

#include "core/cuda/device.h"

#define REQUIRE_DEVICE(built)                                                               \
  if (parascope::cuda::deviceCount() == 0)                                                  \
  QSKIP(("no CUDA device (" + parascope::cuda::whyNoDevice() + "): " + std::string(built) + \
         " but not run here")                                                               \
            .c_str())
