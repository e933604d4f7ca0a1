// Python's str semantics over UTF-8 text: lengths and indexes count code points, whitespace is str.isspace(),
// and the str methods templates call (strip, split, replace, find, title...) behave as CPython's do. Also the
// number <-> text conversions Python uses: repr() of floats, int() and float() of strings.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::chat::jinja::pystr {

// UTF-8 helpers. A byte that does not start a valid sequence decodes as one code point (its byte value), so
// every input has a length and nothing is dropped.
std::vector<uint32_t> decode(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);
std::string encode(const std::vector<uint32_t>& cps, size_t begin = 0, size_t end = SIZE_MAX);
size_t length(std::string_view s);  // code points
bool is_ascii(std::string_view s);

bool is_space(uint32_t cp);      // str.isspace()
bool is_printable(uint32_t cp);  // str.isprintable(), which decides repr's escapes
bool is_cased(uint32_t cp);
bool is_lower_cp(uint32_t cp);
bool is_upper_cp(uint32_t cp);

// str.strip/lstrip/rstrip; `chars` absent strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; `sep` absent splits on whitespace runs. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// The size in bytes replace() would return, without building it.
size_t replaced_size(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// str.find / str.rfind / str.count over code points, with Python's start/end clamping.
int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse);
int64_t count(std::string_view s, std::string_view sub, std::optional<int64_t> start,
              std::optional<int64_t> end);
bool starts_with(std::string_view s, std::string_view prefix, std::optional<int64_t> start,
                 std::optional<int64_t> end, bool at_end);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
std::string swapcase(std::string_view s);
bool is_lower(std::string_view s);  // str.islower(): has a cased character and no uppercase one
bool is_upper(std::string_view s);
std::string center(std::string_view s, int64_t width, uint32_t fill);
std::string ljust(std::string_view s, int64_t width, uint32_t fill, bool right);

// repr() of a str: quotes chosen and characters escaped as CPython does.
std::string repr(std::string_view s);
// repr() / str() of a float: the shortest text that round-trips, laid out as CPython does ("1e+16",
// "0.0001").
std::string float_repr(double d);
// int(s, base) and float(s): nullopt where Python raises ValueError (or the int does not fit in 64 bits).
std::optional<int64_t> parse_int(std::string_view s, int base);
std::optional<double> parse_float(std::string_view s);

}  // namespace keel::chat::jinja::pystr
