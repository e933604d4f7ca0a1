// Token embedding lookup: out[t, :] = table[ids[t], :], widened from the table's stored dtype to f32.
#pragma once
#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "core/tensor.h"
#include "core/weight.h"

namespace keel::ops {

// table: a Weight [vocab, d] — dense f32/bf16/f16 (rows may be strided; borrowed from the mmap), or packed
// on a backend with a packed kernel; ids: i32 [T]; out: f32 [T, d]. An id outside [0, vocab) is an
// Error(invalid_argument) naming the id and its position; nothing is written. host_ids: the same ids in host
// memory when the caller has them (a model uploads them): they are checked instead of a download of `ids`,
// which on a device would wait for the stream.
void embedding(Backend& be, const Weight& table, const Tensor& ids, Tensor& out,
               std::span<const int32_t> host_ids = {});

constexpr int64_t embedding_workspace_bytes() {
  return 0;
}

}  // namespace keel::ops
