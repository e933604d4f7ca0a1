// A line chart as a PNG, written without any imaging library: a palette raster (4 bits per pixel), a 5×7
// bitmap font, and the PNG container with stored (uncompressed) deflate blocks, CRC-32 and Adler-32 as the
// PNG and zlib specifications define them (RFC 2083, RFC 1950/1951). Enough for `keel bench --plot`.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keel::cli {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), x > 0 (drawn on a log2 axis), in x order
  int width = 2;                                  // line width, pixels
};

// An 800×520 chart: x on a log2 scale with a tick at every point's x, y linear from 0. Text is drawn in
// capitals. Throws Error(invalid_argument) naming `path` when it cannot be written.
void write_plot_png(const std::string& path, const std::string& title, const std::string& x_label,
                    const std::string& y_label, const std::vector<PlotSeries>& series);

// The PNG file bytes for a palette image: `pixels` [height × width] indices < palette.size() ≤ 16, palette
// RGB.
std::string encode_palette_png(int width, int height, const std::vector<uint8_t>& pixels,
                               const std::vector<uint32_t>& palette_rgb);

}  // namespace keel::cli
