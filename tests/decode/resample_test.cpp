// Crop boxes, DCT scale choice and bilinear resampling of the JPEG transform,
// on plain buffers (no libjpeg).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "crop.hpp"
#include "resample.hpp"

namespace gpufeed::loader::decode {
namespace {

// libjpeg-turbo 2.x offers these; the >1 ones must never be chosen.
const std::vector<ScaleFactor> kTurboScales = {{2, 1}, {15, 8}, {7, 4}, {13, 8}, {3, 2}, {11, 8}, {5, 4}, {9, 8},
                                               {1, 1}, {7, 8},  {3, 4}, {5, 8},  {1, 2}, {3, 8},  {1, 4}, {1, 8}};

bool same_box(const CropBox& a, const CropBox& b) {
  return std::tie(a.x, a.y, a.width, a.height) == std::tie(b.x, b.y, b.width, b.height);
}

TEST(DecodeCrop, CenterCropIsTorchvisionResize256CenterCrop224) {
  // 500x375: the shorter side 375 resized to 256 keeps 224/256 of it, 328 px.
  const CropBox box = center_crop(500, 375, 224, 224, 0.875);
  EXPECT_EQ(box.width, 328);
  EXPECT_EQ(box.height, 328);
  EXPECT_EQ(box.x, 86);
  EXPECT_EQ(box.y, 24);  // (375 - 328) / 2 = 23.5, rounded
}

TEST(DecodeCrop, CenterCropKeepsTheOutputAspect) {
  const CropBox wide = center_crop(1000, 1000, 200, 100, 1.0);  // output 2:1
  EXPECT_EQ(wide.width, 1000);
  EXPECT_EQ(wide.height, 500);
  EXPECT_EQ(wide.y, 250);
  const CropBox tall = center_crop(300, 900, 100, 100, 1.0);
  EXPECT_EQ(tall.width, 300);
  EXPECT_EQ(tall.height, 300);
  EXPECT_EQ(tall.y, 300);
}

TEST(DecodeCrop, CenterCropOfATinyImageIsAtLeastOnePixel) {
  const CropBox box = center_crop(1, 1, 224, 224, 0.5);
  EXPECT_EQ(box.width, 1);
  EXPECT_EQ(box.height, 1);
}

TEST(DecodeCrop, RandomResizedCropIsReproduciblePerSeed) {
  const JpegOptions options;
  EXPECT_TRUE(same_box(random_resized_crop(640, 480, options, 42), random_resized_crop(640, 480, options, 42)));
  std::set<std::tuple<int, int, int, int>> seen;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const CropBox b = random_resized_crop(640, 480, options, seed);
    seen.insert({b.x, b.y, b.width, b.height});
  }
  EXPECT_GT(seen.size(), 45U) << "different seeds should give different crops";
}

TEST(DecodeCrop, RandomResizedCropStaysInsideTheImageAndItsRanges) {
  const JpegOptions options;  // area 0.08-1, aspect 3/4-4/3
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    const CropBox b = random_resized_crop(640, 480, options, seed);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, 640);
    ASSERT_LE(b.y + b.height, 480);
    const double area = static_cast<double>(b.width) * b.height / (640.0 * 480.0);
    const double aspect = static_cast<double>(b.width) / b.height;
    ASSERT_GT(area, 0.07) << "seed " << seed;
    ASSERT_LE(area, 1.0);
    // Rounding to whole pixels moves the ratio a little.
    ASSERT_GT(aspect, 0.74) << "seed " << seed;
    ASSERT_LT(aspect, 1.35) << "seed " << seed;
  }
}

TEST(DecodeCrop, RandomResizedCropFallsBackToTheClampedCentre) {
  // 1000x10: no crop with aspect <= 4/3 reaches 8% of the area.
  const CropBox box = random_resized_crop(1000, 10, JpegOptions{}, 7);
  EXPECT_EQ(box.height, 10);
  EXPECT_EQ(box.width, 13);
  EXPECT_EQ(box.x, (1000 - 13) / 2);
  EXPECT_EQ(box.y, 0);
}

TEST(DecodeCrop, SeedDependsOnKeyAndRunSeed) {
  EXPECT_EQ(crop_seed("train/a.jpg", 0), crop_seed("train/a.jpg", 0));
  EXPECT_NE(crop_seed("train/a.jpg", 0), crop_seed("train/b.jpg", 0));
  EXPECT_NE(crop_seed("train/a.jpg", 0), crop_seed("train/a.jpg", 1));
}

TEST(DecodeCrop, ChooseCropFollowsTheMode) {
  JpegOptions options;
  EXPECT_TRUE(same_box(choose_crop(500, 375, options, "k"), center_crop(500, 375, 224, 224, 0.875)));
  options.crop = CropMode::RandomResized;
  options.seed = 3;
  EXPECT_TRUE(same_box(choose_crop(500, 375, options, "k"), random_resized_crop(500, 375, options, crop_seed("k", 3))));
  options.crop = CropMode::Whole;
  EXPECT_TRUE(same_box(choose_crop(500, 375, options, "k"), CropBox{0, 0, 500, 375}));
}

TEST(DecodeScale, PicksTheSmallestScaleThatStillCoversTheOutput) {
  // 1000x800 crop to 224: 3/8 gives 375x300; 1/4 would give 250x200 (< 224).
  const ScaleFactor f = choose_scale({0, 0, 1000, 800}, 224, 224, kTurboScales);
  EXPECT_EQ(f.num * 8, 3 * f.denom);
  // Exactly twice the output: 1/2 is still large enough.
  const ScaleFactor half = choose_scale({0, 0, 448, 448}, 224, 224, kTurboScales);
  EXPECT_EQ(half.num * 2, half.denom);
  // A huge crop decodes at 1/8.
  const ScaleFactor eighth = choose_scale({0, 0, 4000, 3000}, 224, 224, kTurboScales);
  EXPECT_EQ(eighth.num * 8, eighth.denom);
}

TEST(DecodeScale, NeverUpscalesInTheDecoder) {
  const ScaleFactor f = choose_scale({0, 0, 100, 100}, 224, 224, kTurboScales);
  EXPECT_EQ(f.num, 1);
  EXPECT_EQ(f.denom, 1);
}

TEST(DecodeScale, ScaledDimensionsRoundUpLikeLibjpeg) {
  EXPECT_EQ(scaled(375, {3, 8}), 141);  // 140.625
  EXPECT_EQ(scaled(640, {1, 2}), 320);
  EXPECT_EQ(scaled(1, {1, 8}), 1);
}

TEST(DecodeScale, RegionFollowsTheScaledImage) {
  const Region r = scale_region({80, 0, 480, 480}, 640, 480, 320, 240);
  EXPECT_DOUBLE_EQ(r.x, 40);
  EXPECT_DOUBLE_EQ(r.y, 0);
  EXPECT_DOUBLE_EQ(r.width, 240);
  EXPECT_DOUBLE_EQ(r.height, 240);
}

std::vector<std::uint8_t> gradient(int width, int height) {
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width * height * 3));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const auto i = static_cast<std::size_t>((y * width + x) * 3);
      rgb[i] = static_cast<std::uint8_t>(x);
      rgb[i + 1] = static_cast<std::uint8_t>(y);
      rgb[i + 2] = static_cast<std::uint8_t>((x + y) / 2);
    }
  }
  return rgb;
}

TEST(DecodeResize, SameSizeRegionIsACopy) {
  const auto src = gradient(40, 30);
  std::vector<std::uint8_t> dst(src.size());
  resize_bilinear_rgb(src.data(), 40, 30, {0, 0, 40, 30}, dst.data(), 40, 30);
  EXPECT_EQ(dst, src);
}

TEST(DecodeResize, SameSizeSubRegionIsACrop) {
  const auto src = gradient(40, 30);
  std::vector<std::uint8_t> dst(10 * 5 * 3);
  resize_bilinear_rgb(src.data(), 40, 30, {12, 7, 10, 5}, dst.data(), 10, 5);
  EXPECT_EQ(dst[0], 12);  // R = x
  EXPECT_EQ(dst[1], 7);   // G = y
  const std::size_t last = (4 * 10 + 9) * 3;
  EXPECT_EQ(dst[last], 21);
  EXPECT_EQ(dst[last + 1], 11);
}

TEST(DecodeResize, HalvingAveragesPairs) {
  // Each output pixel centre falls between two source pixels.
  const auto src = gradient(8, 8);
  std::vector<std::uint8_t> dst(4 * 4 * 3);
  resize_bilinear_rgb(src.data(), 8, 8, {0, 0, 8, 8}, dst.data(), 4, 4);
  for (int x = 0; x < 4; ++x) {
    // Source x 2x and 2x+1 average to 2x + 0.5, rounded half up.
    EXPECT_EQ(dst[static_cast<std::size_t>(x * 3)], 2 * x + 1) << "x " << x;
  }
}

TEST(DecodeResize, LinearGradientStaysLinear) {
  const auto src = gradient(200, 200);
  std::vector<std::uint8_t> dst(50 * 50 * 3);
  resize_bilinear_rgb(src.data(), 200, 200, {0, 0, 200, 200}, dst.data(), 50, 50);
  for (int o = 0; o < 50; ++o) {
    const double expected = (o + 0.5) * 4 - 0.5;  // source coordinate of the output centre
    EXPECT_NEAR(dst[static_cast<std::size_t>(o * 3)], expected, 0.51) << "x " << o;
    EXPECT_NEAR(dst[static_cast<std::size_t>(o * 50 * 3 + 1)], expected, 0.51) << "y " << o;
  }
}

TEST(DecodeResize, UpscalingClampsAtTheEdges) {
  const std::vector<std::uint8_t> src = {10, 20, 30, 110, 120, 130};  // 2x1
  std::vector<std::uint8_t> dst(8 * 1 * 3);
  resize_bilinear_rgb(src.data(), 2, 1, {0, 0, 2, 1}, dst.data(), 8, 1);
  EXPECT_EQ(dst[0], 10);
  EXPECT_EQ(dst[7 * 3], 110);
  for (int x = 1; x < 8; ++x) EXPECT_GE(dst[static_cast<std::size_t>(x * 3)], dst[static_cast<std::size_t>((x - 1) * 3)]);
}

class Antialiased : public ::testing::TestWithParam<Kernel> {};

TEST_P(Antialiased, SameSizeRegionIsACopy) {
  // At scale 1 the kernels are 1 at their centre and 0 at whole offsets.
  const auto src = gradient(40, 30);
  std::vector<std::uint8_t> dst(src.size());
  resize_antialiased_rgb(src.data(), 40, 30, {0, 0, 40, 30}, dst.data(), 40, 30, GetParam());
  EXPECT_EQ(dst, src);
}

TEST_P(Antialiased, AFlatImageStaysFlat) {
  std::vector<std::uint8_t> src(97 * 61 * 3, 173);
  std::vector<std::uint8_t> dst(24 * 17 * 3);
  resize_antialiased_rgb(src.data(), 97, 61, {3, 2, 90, 55}, dst.data(), 24, 17, GetParam());
  for (auto v : dst) ASSERT_EQ(v, 173);  // weights sum to 1 everywhere, edges included
}

TEST_P(Antialiased, ShrinkingAStripedImageAveragesTheStripes) {
  // One-pixel black and white columns shrunk 3x: the 2-tap resize lands on
  // single columns and keeps the stripes' full contrast (aliasing); an
  // antialiased one weighs every column under the output pixel: near grey.
  std::vector<std::uint8_t> src(63 * 9 * 3);
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 63; ++x) {
      for (int c = 0; c < 3; ++c) src[static_cast<std::size_t>((y * 63 + x) * 3 + c)] = x % 2 ? 255 : 0;
    }
  }
  std::vector<std::uint8_t> aa(21 * 3 * 3), fast(21 * 3 * 3);
  resize_antialiased_rgb(src.data(), 63, 9, {0, 0, 63, 9}, aa.data(), 21, 3, GetParam());
  resize_bilinear_rgb(src.data(), 63, 9, {0, 0, 63, 9}, fast.data(), 21, 3);
  int aliased = 0;
  for (int x = 1; x < 20; ++x) {
    const auto i = static_cast<std::size_t>(x * 3);
    EXPECT_GE(aa[i], 85) << "x " << x;
    EXPECT_LE(aa[i], 170) << "x " << x;
    aliased += fast[i] == 0 || fast[i] == 255;
  }
  EXPECT_GT(aliased, 15) << "the 2-tap resize should alias here, or the test tells nothing";
}

TEST_P(Antialiased, LinearGradientStaysLinear) {
  const auto src = gradient(200, 200);
  std::vector<std::uint8_t> dst(50 * 50 * 3);
  resize_antialiased_rgb(src.data(), 200, 200, {0, 0, 200, 200}, dst.data(), 50, 50, GetParam());
  for (int o = 2; o < 48; ++o) {  // away from the clamped edges
    const double expected = (o + 0.5) * 4 - 0.5;
    EXPECT_NEAR(dst[static_cast<std::size_t>(o * 3)], expected, 0.51) << "x " << o;
    EXPECT_NEAR(dst[static_cast<std::size_t>(o * 50 * 3 + 1)], expected, 0.51) << "y " << o;
  }
}

TEST_P(Antialiased, ASubRegionReadsOnlyItsOwnPixels) {
  // Left half 0, right half 255: the left half's crop stays black.
  std::vector<std::uint8_t> src(40 * 10 * 3, 0);
  for (int y = 0; y < 10; ++y) {
    for (int x = 20; x < 40; ++x) {
      for (int c = 0; c < 3; ++c) src[static_cast<std::size_t>((y * 40 + x) * 3 + c)] = 255;
    }
  }
  std::vector<std::uint8_t> dst(5 * 5 * 3);
  resize_antialiased_rgb(src.data(), 40, 10, {0, 0, 20, 10}, dst.data(), 5, 5, GetParam());
  for (auto v : dst) ASSERT_EQ(v, 0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Antialiased, ::testing::Values(Kernel::Triangle, Kernel::Bicubic),
                         [](const ::testing::TestParamInfo<Kernel>& p) {
                           return p.param == Kernel::Triangle ? std::string("bilinear") : std::string("bicubic");
                         });

TEST(DecodeColour, CmykIsAdobeInverted) {
  std::vector<std::uint8_t> px = {255, 0, 0, 255,  // no cyan ink, full magenta and yellow: red
                                  255, 255, 255, 0,  // full black ink
                                  128, 255, 255, 255};
  cmyk_to_rgb_in_place(px.data(), 3);
  EXPECT_EQ(std::vector<std::uint8_t>(px.begin(), px.begin() + 9),
            (std::vector<std::uint8_t>{255, 0, 0, 0, 0, 0, 128, 255, 255}));
}

}  // namespace
}  // namespace gpufeed::loader::decode
