#include "crop.hpp"

#include <algorithm>
#include <cmath>

namespace gpufeed::loader::decode {
namespace {

// splitmix64: tiny, fully specified, so crops do not depend on how a standard
// library implements its distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) {
    const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * unit;
  }
  // Uniform integer in [0, count); count > 0.
  int below(int count) { return static_cast<int>(next() % static_cast<std::uint64_t>(count)); }

 private:
  std::uint64_t state_;
};

int round_to_int(double value) { return static_cast<int>(std::lround(value)); }

}  // namespace

CropBox center_crop(int image_width, int image_height, int out_width, int out_height, double fraction) {
  const double out_aspect = static_cast<double>(out_width) / out_height;
  const double image_aspect = static_cast<double>(image_width) / image_height;
  double width = 0;
  double height = 0;
  if (image_aspect > out_aspect) {  // wider than the output: height limits
    height = image_height * fraction;
    width = height * out_aspect;
  } else {
    width = image_width * fraction;
    height = width / out_aspect;
  }
  CropBox box;
  box.width = std::clamp(round_to_int(width), 1, image_width);
  box.height = std::clamp(round_to_int(height), 1, image_height);
  box.x = round_to_int((image_width - box.width) / 2.0);
  box.y = round_to_int((image_height - box.height) / 2.0);
  return box;
}

CropBox random_resized_crop(int image_width, int image_height, const JpegOptions& options,
                            std::uint64_t seed) {
  SplitMix64 rng(seed);
  const double area = static_cast<double>(image_width) * image_height;
  const double log_min = std::log(options.min_aspect);
  const double log_max = std::log(options.max_aspect);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(options.min_area, options.max_area);
    const double aspect = std::exp(rng.uniform(log_min, log_max));
    const int width = round_to_int(std::sqrt(target_area * aspect));
    const int height = round_to_int(std::sqrt(target_area / aspect));
    if (width > 0 && width <= image_width && height > 0 && height <= image_height) {
      CropBox box{0, 0, width, height};
      box.y = rng.below(image_height - height + 1);
      box.x = rng.below(image_width - width + 1);
      return box;
    }
  }
  // Ten misses (a very elongated image): the whole image, clamped to the
  // ratio range, centred — torchvision's fallback.
  const double image_aspect = static_cast<double>(image_width) / image_height;
  CropBox box{0, 0, image_width, image_height};
  if (image_aspect < options.min_aspect) {
    box.height = std::clamp(round_to_int(image_width / options.min_aspect), 1, image_height);
  } else if (image_aspect > options.max_aspect) {
    box.width = std::clamp(round_to_int(image_height * options.max_aspect), 1, image_width);
  }
  box.x = (image_width - box.width) / 2;
  box.y = (image_height - box.height) / 2;
  return box;
}

std::uint64_t crop_seed(std::string_view key, std::uint64_t run_seed) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (const char c : key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash ^ SplitMix64(run_seed).next();
}

CropBox choose_crop(int image_width, int image_height, const JpegOptions& options, std::string_view key) {
  if (options.crop == CropMode::Whole) return CropBox{0, 0, image_width, image_height};
  if (options.crop == CropMode::RandomResized) {
    return random_resized_crop(image_width, image_height, options, crop_seed(key, options.seed));
  }
  return center_crop(image_width, image_height, options.width, options.height, options.center_fraction);
}

}  // namespace gpufeed::loader::decode
