#pragma once
// Where in the source image the output comes from. Integer pixel boxes in the
// full-size image, as torchvision computes them, so crops are comparable.
#include <cstdint>
#include <string_view>

#include "gpufeed/decode/jpeg_transform.hpp"

namespace gpufeed::loader::decode {

struct CropBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// The centred box with the output's aspect ratio covering `fraction` of the
// image's limiting extent (torchvision Resize(256)+CenterCrop(224) is 0.875).
CropBox center_crop(int image_width, int image_height, int out_width, int out_height, double fraction);

// torchvision's RandomResizedCrop.get_params with our own generator: ten
// tries at a random area and aspect ratio, then the centre crop clamped to the
// ratio range. The same `seed` gives the same box on every platform.
CropBox random_resized_crop(int image_width, int image_height, const JpegOptions& options,
                            std::uint64_t seed);

// The generator seed of one sample: its key mixed with the run's seed.
std::uint64_t crop_seed(std::string_view key, std::uint64_t run_seed);

// The box the options ask for, for the sample `key`.
CropBox choose_crop(int image_width, int image_height, const JpegOptions& options, std::string_view key);

}  // namespace gpufeed::loader::decode
