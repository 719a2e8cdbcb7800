"""Tests of python/gpufeed_pytorch_probe.py's crop geometry and arguments (standard library only):
/usr/bin/python3 -m unittest python/test_gpufeed_pytorch_probe.py. Its measurement under real torch is
tested through gpufeed tune (tests/cli/pytorch_probe_test.cpp)."""
import contextlib
import io
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufeed_pytorch_probe as probe  # noqa: E402


def args(*extra):
    return probe.parse_args(["--samples", "/nonexistent"] + list(extra))


class CropBoxTest(unittest.TestCase):
    def test_whole_is_the_whole_image(self):
        self.assertEqual(probe.crop_box(args("--crop", "whole"), 400, 300, random.Random(1)), (0, 0, 400, 300))

    def test_center_is_the_central_share_of_the_shorter_side(self):
        # 0.875 of 300 = 262.5: a centred square, as Resize(256) + CenterCrop(224).
        left, top, right, bottom = probe.crop_box(args("--crop", "center"), 400, 300, random.Random(1))
        self.assertAlmostEqual(right - left, 262.5, delta=1)
        self.assertAlmostEqual(bottom - top, 262.5, delta=1)
        self.assertAlmostEqual((left + right) / 2, 200, delta=1)
        self.assertAlmostEqual((top + bottom) / 2, 150, delta=1)

    def test_center_keeps_the_outputs_aspect(self):
        left, top, right, bottom = probe.crop_box(args("--crop", "center", "--size", "200x100"), 400, 300,
                                                  random.Random(1))
        self.assertAlmostEqual((right - left) / (bottom - top), 2.0, delta=0.02)

    def test_random_resized_stays_inside_the_image(self):
        rng = random.Random(7)
        a = args("--crop", "random-resized")
        for _ in range(500):
            left, top, right, bottom = probe.crop_box(a, 355, 303, rng)
            self.assertTrue(0 <= left < right <= 355 and 0 <= top < bottom <= 303, (left, top, right, bottom))


class ArgumentsTest(unittest.TestCase):
    def refused(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as e:
            probe.parse_args(["--samples", "/nonexistent"] + list(argv))
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_bad_values_are_refused_with_exit_2(self):
        self.assertIn("WIDTHxHEIGHT", self.refused("--size", "224"))
        self.refused("--batch-size", "0")
        self.refused("--seconds", "0")
        self.refused("--crop", "full")

    def test_size_is_width_by_height(self):
        a = args("--size", "320x240")
        self.assertEqual((a.width, a.height), (320, 240))


if __name__ == "__main__":
    unittest.main()
