// safetensors reading: files written here by the test (its own writer, tests/load/test_files.h, and literal
// bytes), read back through keel's views and compared with the values written; every kind of corruption must
// give a clear error naming the file and the tensor, never a crash.
#include "load/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "load/weight_store.h"
#include "test_files.h"

using namespace keel;
using namespace keel::testing;

namespace {

// Runs f, expects keel::Error with `code` whose message contains every needle; returns the message.
template <typename F>
std::string expect_error(F&& f, ErrorCode code, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

// Writes `bytes` as DIR/name and opens it as a one-file store.
struct OneFile {
  TempDir dir;
  std::string path;
  explicit OneFile(const std::string& bytes, const std::string& name = "model.safetensors")
      : path(dir.file(name)) {
    write_file(path, bytes);
  }
};

std::string bad_file(const std::string& header, const std::string& data = std::string(16, '\0')) {
  return raw_safetensors(header, data);
}

void expect_bad(const std::string& bytes, ErrorCode code, std::vector<std::string> needles) {
  OneFile f(bytes);
  needles.push_back(f.path);
  expect_error([&] { SafetensorsFile file(f.path); }, code, needles);
}

}  // namespace

TEST(Safetensors, ReadsLiteralBytes) {
  // Header and data spelled out byte by byte: F32 [2] = {1.5, -2.0}; little-endian IEEE 754.
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string data("\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8);
  OneFile f(le64(header.size()) + header + data);
  WeightStore store = WeightStore::open_file(f.path);
  Tensor w = store.get("w", {2});
  EXPECT_EQ(w.dtype(), DType::f32);
  EXPECT_EQ(w.ptr<float>()[0], 1.5f);
  EXPECT_EQ(w.ptr<float>()[1], -2.0f);
}

TEST(Safetensors, ZeroCopyViewsWithDtypesShapesAndMetadata) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<uint16_t> b = {0x3f80, 0xc000, 0x4040};  // bf16 1, -2, 3
  std::vector<int64_t> c = {-7, 1LL << 40};
  std::vector<float> scalar = {0.25f};
  std::string bytes = SafetensorsBuilder()
                          .metadata(R"({"format":"pt"})")
                          .add("layer.a", "F32", {2, 3}, bytes_of(a))
                          .add("layer.b", "BF16", {3}, bytes_of(b))
                          .add("c", "I64", {2}, bytes_of(c))
                          .add("s", "F32", {}, bytes_of(scalar))
                          .add("empty", "F16", {0, 4}, "")
                          .build();
  OneFile f(bytes);
  SafetensorsFile file(f.path);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  ASSERT_EQ(file.header().tensors.size(), 5u);

  WeightStore store = WeightStore::open_file(f.path);
  Tensor ta = store.get("layer.a", {2, 3});
  EXPECT_EQ(ta.ptr<float>()[5], 6.0f);
  EXPECT_EQ(*static_cast<float*>(ta.at(1, 2)), 6.0f);
  // Zero-copy: the view points into the mapping, at the data region's start + the tensor's begin offset.
  const TensorRecord& ra = *store.find("layer.a")->record;
  EXPECT_EQ(static_cast<const uint8_t*>(ta.data()), store.shards()[0]->data(ra));
  EXPECT_EQ(bf16_to_f32(store.get("layer.b").ptr<uint16_t>()[1]), -2.0f);
  EXPECT_EQ(store.get("c").ptr<int64_t>()[1], 1LL << 40);
  Tensor ts = store.get("s", std::vector<int64_t>{});
  EXPECT_EQ(ts.ndim(), 0);
  EXPECT_EQ(ts.ptr<float>()[0], 0.25f);
  EXPECT_EQ(store.get("empty").numel(), 0);

  EXPECT_EQ(store.parameter_count(), 6 + 3 + 2 + 1 + 0);
  auto by_dtype = store.bytes_by_dtype();
  EXPECT_EQ(by_dtype[DType::f32], 6 * 4 + 4);
  EXPECT_EQ(by_dtype[DType::bf16], 3 * 2);
  EXPECT_EQ(by_dtype[DType::i64], 2 * 8);
  EXPECT_EQ(store.total_bytes(), 28 + 6 + 16);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"c", "empty", "layer.a", "layer.b", "s"}));
}

TEST(Safetensors, EmptyHeaderIsValid) {
  OneFile f(raw_safetensors("{}      ", ""));
  EXPECT_EQ(WeightStore::open_file(f.path).size(), 0u);
}

TEST(Safetensors, RejectsShortAndTruncatedFiles) {
  expect_bad("", ErrorCode::invalid_file, {"too short"});
  expect_bad(std::string("\x10\x00\x00", 3), ErrorCode::invalid_file, {"too short"});
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  // Header cut off in the middle: the length prefix runs past the end.
  expect_bad(le64(header.size()) + header.substr(0, 20), ErrorCode::invalid_file, {"runs past the end"});
  // A length beyond any sane header.
  expect_bad(le64(1ULL << 40) + header, ErrorCode::invalid_file, {"outside"});
  expect_bad(le64(~0ULL) + header, ErrorCode::invalid_file, {"outside"});
  expect_bad(le64(0) + header, ErrorCode::invalid_file, {"outside"});
  // Data cut off: the tensor's bytes run past the end.
  expect_bad(le64(header.size()) + header + std::string(5, '\0'), ErrorCode::invalid_file,
             {"'w'", "past the end of the data region"});
}

TEST(Safetensors, RejectsMalformedJson) {
  expect_bad(bad_file(R"({"w":{"dtype":"F32",)"), ErrorCode::invalid_file, {"not valid JSON"});
  expect_bad(bad_file(R"([1, 2, 3])"), ErrorCode::invalid_file, {"does not start with '{'"});
  expect_bad(bad_file(R"({"w": 5})"), ErrorCode::invalid_file, {"'w'", "not a JSON object"});
  expect_bad(bad_file("{\"w\xff\xfe\":{}}"), ErrorCode::invalid_file, {"not valid JSON"});
  // Deep nesting is an error, not a stack overflow.
  std::string deep = "{\"w\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  expect_bad(bad_file(deep), ErrorCode::invalid_file, {"'w'", "not a JSON object"});
  expect_bad(bad_file(R"({"__metadata__":{"k":1}})"), ErrorCode::invalid_file, {"__metadata__", "'k'"});
  expect_bad(bad_file(R"({"__metadata__":[]})"), ErrorCode::invalid_file, {"__metadata__"});
}

TEST(Safetensors, RejectsBadDtypes) {
  expect_bad(bad_file(R"({"fp8.weight":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})"),
             ErrorCode::unsupported, {"'fp8.weight'", "F8_E4M3"});
  expect_bad(bad_file(R"({"w":{"dtype":"float32","shape":[2],"data_offsets":[0,8]}})"),
             ErrorCode::unsupported, {"'w'", "float32"});
  expect_bad(bad_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "dtype"});
  expect_bad(bad_file(R"({"w":{"dtype":3,"shape":[2],"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "dtype"});
}

TEST(Safetensors, RejectsBadShapes) {
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}})"),
             ErrorCode::invalid_file, {"'w'", "shape entry -1"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "shape entry 2.0"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "not a non-negative integer"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "shape"});
  // 2^32 · 2^32 · 4 elements overflow int64.
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})"),
             ErrorCode::invalid_file, {"'w'", "64 bits"});
  // 2^62 elements fit, their F32 bytes do not.
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})"),
             ErrorCode::invalid_file, {"'w'", "64 bits"});
  // Beyond uint64.
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,8]}})"),
             ErrorCode::invalid_file, {"'w'"});
}

TEST(Safetensors, RejectsBadOffsets) {
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,1000]}})"),
             ErrorCode::invalid_file, {"'w'", "past the end of the data region (16 bytes"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})"), ErrorCode::invalid_file,
             {"'w'", "end 0 is before begin 8"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})"), ErrorCode::invalid_file,
             {"'w'", "hold 8 bytes but shape [3] of F32 needs 12 bytes"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})"), ErrorCode::invalid_file,
             {"'w'", "[begin, end]"});
  expect_bad(bad_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})"), ErrorCode::invalid_file,
             {"'w'", "non-negative"});
  expect_bad(
      bad_file(
          R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551608,18446744073709551616]}})"),
      ErrorCode::invalid_file, {"'w'"});
  expect_bad(bad_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                          "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})"),
             ErrorCode::invalid_file, {"'a'", "'b'", "overlap"});
  // Empty tensors never overlap anything.
  OneFile ok(bad_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                          "b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})"));
  EXPECT_NO_THROW(SafetensorsFile file(ok.path));
}

TEST(Safetensors, FileThatIsNotThereIsNamed) {
  TempDir dir;
  expect_error([&] { SafetensorsFile f(dir.file("nope.safetensors")); }, ErrorCode::invalid_file,
               {dir.file("nope.safetensors")});
}
