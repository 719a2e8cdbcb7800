#pragma once
// Pixel work after the JPEG decoder: picking the DCT scale, converting CMYK,
// and the bilinear crop-and-resize into the batch buffer. Plain functions on
// plain buffers so they are tested without libjpeg.
#include <cstdint>
#include <span>

#include "crop.hpp"

namespace gpufeed::loader::decode {

// A DCT scaling factor num/denom as libjpeg-turbo offers them (1/8 .. 2/1).
struct ScaleFactor {
  int num = 1;
  int denom = 1;
};

// An image dimension after scaling; libjpeg rounds up (TJSCALED).
int scaled(int dimension, ScaleFactor factor);

// The smallest factor, at most 1/1, at which `crop` still covers at least
// out_width x out_height pixels; 1/1 when the crop is smaller than the output
// (upscaling gains nothing from the DCT).
ScaleFactor choose_scale(const CropBox& crop, int out_width, int out_height,
                         std::span<const ScaleFactor> available);

// A region of the decoded image in its own (possibly scaled) pixel units.
struct Region {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

// `crop` (full-size pixels) in the coordinates of the image decoded at
// scaled_width x scaled_height.
Region scale_region(const CropBox& crop, int image_width, int image_height, int scaled_width,
                    int scaled_height);

// Samples `region` of the packed RGB image `src` (src_width x src_height) onto
// dst_width x dst_height packed RGB pixels at `dst`: bilinear, pixel centres
// at +0.5 (align_corners=False), edges clamped to the region.
void resize_bilinear_rgb(const std::uint8_t* src, int src_width, int src_height, const Region& region,
                         std::uint8_t* dst, int dst_width, int dst_height);

// The same region and output, resampled as PIL's Image.resize and
// torchvision's Resize(antialias=True) do: a separable convolution whose
// filter (triangle for bilinear, Keys a = -0.5 for bicubic) widens with the
// downscale factor, so every source pixel under an output pixel counts.
// Horizontal pass into an 8-bit intermediate, then vertical, as PIL does.
// It costs several times the 2-tap resize, which is the point: it is the
// CPU a PIL pipeline pays per sample.
enum class Kernel { Triangle, Bicubic };
void resize_antialiased_rgb(const std::uint8_t* src, int src_width, int src_height, const Region& region,
                            std::uint8_t* dst, int dst_width, int dst_height, Kernel kernel);

// Converts `pixels` packed CMYK pixels to packed RGB in place (the RGB result
// occupies the first 3*pixels bytes). Adobe's inverted CMYK, as JPEG files
// store it: 255 means no ink, so R = C*K/255.
void cmyk_to_rgb_in_place(std::uint8_t* data, std::size_t pixels);

}  // namespace gpufeed::loader::decode
