# Cache tiers (src/cache): the LRU map, single-flight, checksums and entry
# format on plain values (unit); both tiers over a fake store, and the SSD
# tier on real directories and tmpfs mounts (system).
gpufeed_test_suite(gpufeed_cache_unit_tests unit unit/cache_parts_test.cpp)
target_link_libraries(gpufeed_cache_unit_tests PRIVATE gpufeed_cache)
target_include_directories(gpufeed_cache_unit_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/cache)

gpufeed_test_suite(gpufeed_cache_system_tests system system/cache_tiers_test.cpp system/cache_ssd_test.cpp)
target_link_libraries(gpufeed_cache_system_tests PRIVATE gpufeed_cache)
target_include_directories(gpufeed_cache_system_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/cache)
