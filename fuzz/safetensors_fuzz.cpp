// fuzz-libs: keel_core keel_load

// libFuzzer target: the safetensors header parser on arbitrary bytes. keel::Error is the only acceptable
// failure; anything else (a sanitizer report, another exception type, a hang) is a bug. For every tensor the
// parser accepts, its first and last byte are read, so a range outside the buffer shows up as an ASan report.
//
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "load/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    keel::SafetensorsHeader h =
        keel::parse_safetensors_header(data, static_cast<int64_t>(size), "fuzz.safetensors");
    volatile uint8_t sink = 0;
    for (const keel::TensorRecord& t : h.tensors) {
      if (t.nbytes == 0) continue;
      const uint8_t* p = data + h.data_start + t.begin;
      sink = sink ^ p[0] ^ p[t.nbytes - 1];
    }
    (void)sink;
  } catch (const keel::Error&) {
  }
  return 0;
}
