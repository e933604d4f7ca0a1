#include "cli/bench_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>

#include "core/error.h"

namespace keel::cli {

namespace {

// 5×7 glyphs: 7 rows of 5 bits (bit 4 = leftmost column), the top row in the highest byte.
const std::map<char, uint64_t>& font() {
  static const std::map<char, uint64_t> glyphs = {
      {'0', 0x0e11131519110eull}, {'1', 0x040c040404040eull}, {'2', 0x0e11010204081full},
      {'3', 0x1f02040201110eull}, {'4', 0x02060a121f0202ull}, {'5', 0x1f101e0101110eull},
      {'6', 0x0608101e11110eull}, {'7', 0x1f010204080808ull}, {'8', 0x0e11110e11110eull},
      {'9', 0x0e11110f01020cull}, {'A', 0x0e11111f111111ull}, {'B', 0x1e11111e11111eull},
      {'C', 0x0e11101010110eull}, {'D', 0x1c12111111121cull}, {'E', 0x1f10101e10101full},
      {'F', 0x1f10101e101010ull}, {'G', 0x0e11101711110full}, {'H', 0x1111111f111111ull},
      {'I', 0x0e04040404040eull}, {'J', 0x0702020202120cull}, {'K', 0x11121418141211ull},
      {'L', 0x1010101010101full}, {'M', 0x111b1515111111ull}, {'N', 0x11111915131111ull},
      {'O', 0x0e11111111110eull}, {'P', 0x1e11111e101010ull}, {'Q', 0x0e11111115120dull},
      {'R', 0x1e11111e141211ull}, {'S', 0x0f10100e01011eull}, {'T', 0x1f040404040404ull},
      {'U', 0x1111111111110eull}, {'V', 0x11111111110a04ull}, {'W', 0x1111111515150aull},
      {'X', 0x11110a040a1111ull}, {'Y', 0x11110a04040404ull}, {'Z', 0x1f01020408101full},
      {' ', 0x00000000000000ull}, {'.', 0x00000000000c0cull}, {',', 0x000000000c0408ull},
      {'-', 0x0000001f000000ull}, {'(', 0x02040808080402ull}, {')', 0x08040202020408ull},
      {'/', 0x00010204081000ull}, {':', 0x000c0c000c0c00ull}, {'%', 0x18190204081303ull},
      {'+', 0x0004041f040400ull}, {'=', 0x00001f001f0000ull}, {'_', 0x0000000000001full},
  };
  return glyphs;
}

uint32_t crc32(const std::string& bytes, size_t begin) {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (size_t i = begin; i < bytes.size(); ++i)
    c = table[(c ^ static_cast<uint8_t>(bytes[i])) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void put_be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out += type;
  out += data;
  put_be32(out, crc32(out, start));  // over type and data
}

// A zlib stream (RFC 1950) holding `raw` in stored deflate blocks (RFC 1951 §3.2.4).
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(65535, raw.size() - pos);
    const bool last = pos + n == raw.size();
    z.push_back(static_cast<char>(last ? 1 : 0));
    z.push_back(static_cast<char>(n & 0xff));
    z.push_back(static_cast<char>(n >> 8));
    z.push_back(static_cast<char>(~n & 0xff));
    z.push_back(static_cast<char>((~n >> 8) & 0xff));
    z.append(raw, pos, n);
    pos += n;
  } while (pos < raw.size());
  uint32_t a = 1, b = 0;  // Adler-32
  for (char c : raw) {
    a = (a + static_cast<uint8_t>(c)) % 65521;
    b = (b + a) % 65521;
  }
  put_be32(z, (b << 16) | a);
  return z;
}

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(static_cast<size_t>(w * h), 0) {}
  void set(int x, int y, uint8_t c) {
    if (x >= 0 && y >= 0 && x < w_ && y < h_) px_[static_cast<size_t>(y * w_ + x)] = c;
  }
  void rect(int x0, int y0, int x1, int y1, uint8_t c) {
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) set(x, y, c);
  }
  // A line `thick` pixels wide (Bresenham, a square brush).
  void line(int x0, int y0, int x1, int y1, uint8_t c, int thick = 1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      rect(x0 - thick / 2, y0 - thick / 2, x0 + (thick - 1) / 2, y0 + (thick - 1) / 2, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // Text with its top-left corner at (x, y), glyphs 6·scale pixels apart.
  void text(int x, int y, const std::string& s, uint8_t c, int scale = 1) {
    for (char ch : s) {
      auto it = font().find(static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
      const uint64_t g = it == font().end() ? 0 : it->second;
      for (int row = 0; row < 7; ++row)
        for (int col = 0; col < 5; ++col)
          if ((g >> (8 * (6 - row))) & (0x10u >> col))
            rect(x + col * scale, y + row * scale, x + col * scale + scale - 1, y + row * scale + scale - 1,
                 c);
      x += 6 * scale;
    }
  }
  static int text_width(const std::string& s, int scale = 1) {
    return static_cast<int>(s.size()) * 6 * scale;
  }
  const std::vector<uint8_t>& pixels() const { return px_; }

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

// 1536 -> "1.5K", 32768 -> "32K", 100 -> "100".
std::string tokens_label(double x) {
  if (x >= 1024 && std::fmod(x, 512) == 0) {
    const double k = x / 1024;
    return k == std::floor(k) ? fmt::format("{}K", static_cast<int64_t>(k)) : fmt::format("{:.1f}K", k);
  }
  return fmt::format("{}", static_cast<int64_t>(x));
}

// The tick step for [0, top]: 1, 2 or 5 × 10^k giving about five intervals.
double nice_step(double top) {
  const double raw = top / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace

std::string encode_palette_png(int width, int height, const std::vector<uint8_t>& pixels,
                               const std::vector<uint32_t>& palette_rgb) {
  std::string raw;  // each row: filter type 0, then two 4-bit pixels per byte
  const int row_bytes = (width + 1) / 2;
  raw.reserve(static_cast<size_t>((row_bytes + 1) * height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    for (int x = 0; x < width; x += 2) {
      const uint8_t hi = pixels[static_cast<size_t>(y * width + x)];
      const uint8_t lo = x + 1 < width ? pixels[static_cast<size_t>(y * width + x + 1)] : 0;
      raw.push_back(static_cast<char>((hi << 4) | (lo & 0xf)));
    }
  }
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(width));
  put_be32(ihdr, static_cast<uint32_t>(height));
  ihdr += std::string("\x04\x03\x00\x00\x00", 5);  // bit depth 4, palette, deflate, filter 0, no interlace
  put_chunk(png, "IHDR", ihdr);
  std::string plte;
  for (uint32_t rgb : palette_rgb) {
    plte.push_back(static_cast<char>((rgb >> 16) & 0xff));
    plte.push_back(static_cast<char>((rgb >> 8) & 0xff));
    plte.push_back(static_cast<char>(rgb & 0xff));
  }
  put_chunk(png, "PLTE", plte);
  put_chunk(png, "IDAT", zlib_stored(raw));
  put_chunk(png, "IEND", "");
  return png;
}

void write_plot_png(const std::string& path, const std::string& title, const std::string& x_label,
                    const std::string& y_label, const std::vector<PlotSeries>& series) {
  enum : uint8_t { white, black, grid, c0, c1, c2, c3, c4 };
  const std::vector<uint32_t> palette = {0xffffff, 0x000000, 0xdddddd, 0x1f77b4,
                                         0xff7f0e, 0xd62728, 0x2ca02c, 0x9467bd};
  const int W = 800, H = 520, left = 90, right = 20, top = 50, bottom = 70;
  const int pw = W - left - right, ph = H - top - bottom;
  Canvas cv(W, H);

  double xmin = 0, xmax = 0, ymax = 0;
  bool any = false;
  for (const PlotSeries& s : series)
    for (auto [x, y] : s.points) {
      if (x <= 0) continue;
      xmin = any ? std::min(xmin, x) : x;
      xmax = any ? std::max(xmax, x) : x;
      ymax = std::max(ymax, y);
      any = true;
    }
  if (!any) xmin = 1, xmax = 2;
  const double lx0 = std::log2(xmin) - 0.25, lx1 = std::log2(std::max(xmax, xmin * 1.0001)) + 0.25;
  const double step = nice_step(ymax > 0 ? ymax * 1.08 : 1), ytop = std::ceil(ymax * 1.08 / step) * step;
  auto px = [&](double x) {
    return left + static_cast<int>(std::lround((std::log2(x) - lx0) / (lx1 - lx0) * pw));
  };
  auto py = [&](double y) { return top + ph - static_cast<int>(std::lround(y / ytop * ph)); };

  for (double y = 0; y <= ytop * 1.0001; y += step) {  // grid and y ticks
    cv.line(left, py(y), left + pw, py(y), grid);
    const std::string label = step < 1 ? fmt::format("{:.2f}", y) : fmt::format("{:.0f}", y);
    cv.text(left - 8 - Canvas::text_width(label), py(y) - 3, label, black);
  }
  int last_label_end = -1000;
  std::vector<double> xs;
  for (const PlotSeries& s : series)
    for (auto [x, y] : s.points) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) {  // x ticks at the measured lengths
    cv.line(px(x), top + ph, px(x), top + ph + 5, black);
    const std::string label = tokens_label(x);
    const int lx = px(x) - Canvas::text_width(label) / 2;
    if (lx > last_label_end + 6) {
      cv.text(lx, top + ph + 10, label, black);
      last_label_end = lx + Canvas::text_width(label);
    }
  }
  cv.line(left, top, left, top + ph, black);
  cv.line(left, top + ph, left + pw, top + ph, black);
  cv.text((W - Canvas::text_width(title, 2)) / 2, 14, title, black, 2);
  cv.text(left + (pw - Canvas::text_width(x_label)) / 2, H - 30, x_label + " (log scale)", black);
  cv.text(10, top - 16, y_label, black);

  for (size_t i = 0; i < series.size(); ++i) {
    const uint8_t color = static_cast<uint8_t>(c0 + i % 5);
    const auto& pts = series[i].points;
    for (size_t j = 0; j < pts.size(); ++j) {
      const int x = px(pts[j].first), y = py(pts[j].second);
      const int r = series[i].width + 1;
      cv.rect(x - r, y - r, x + r, y + r, color);
      if (j > 0) cv.line(px(pts[j - 1].first), py(pts[j - 1].second), x, y, color, series[i].width);
    }
    const int ly = top + 10 + static_cast<int>(i) * 14;  // legend, top left of the plot area
    cv.rect(left + 12, ly + 2, left + 32, ly + 4, color);
    cv.text(left + 40, ly, series[i].label, black);
  }

  std::ofstream f(path, std::ios::binary);
  const std::string png = encode_palette_png(W, H, cv.pixels(), palette);
  f.write(png.data(), static_cast<std::streamsize>(png.size()));
  if (!f) throw_error(ErrorCode::invalid_argument, "--plot: cannot write {}", path);
}

}  // namespace keel::cli
