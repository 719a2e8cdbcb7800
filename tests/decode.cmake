# JPEG transform (src/decode): crop geometry and resampling on plain buffers
# (unit), and the transform against the real libjpeg-turbo (system).
gpufeed_test_suite(gpufeed_decode_unit_tests unit decode/resample_test.cpp)
target_link_libraries(gpufeed_decode_unit_tests PRIVATE gpufeed_decode)
target_include_directories(gpufeed_decode_unit_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/decode)

gpufeed_test_suite(gpufeed_decode_system_tests system decode/jpeg_transform_test.cpp)
target_link_libraries(gpufeed_decode_system_tests PRIVATE gpufeed_decode)
