// REQUIRE_GPU(): skips the calling test, saying why, on a machine without a CUDA device (CI's).
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/cuda_device.h"

#define REQUIRE_GPU()                                                                                 \
  do {                                                                                                \
    std::string why_no_gpu;                                                                           \
    if (keel::cuda::device_count(&why_no_gpu) == 0) GTEST_SKIP() << "no CUDA device: " << why_no_gpu; \
  } while (0)
