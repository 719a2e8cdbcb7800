# Cache tiers (src/cache): the LRU map, single-flight, checksums and entry
# format on plain values (unit); both tiers over a fake store, and the SSD
# tier on real directories and tmpfs mounts (system).
gpufeed_test_suite(gpufeed_cache_unit_tests unit
  cache/entry_file_test.cpp
  cache/hashing_test.cpp
  cache/lru_map_test.cpp
  cache/single_flight_test.cpp)
target_link_libraries(gpufeed_cache_unit_tests PRIVATE gpufeed_cache)
target_include_directories(gpufeed_cache_unit_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/cache)

gpufeed_test_suite(gpufeed_cache_system_tests system cache/memory_cache_test.cpp cache/ssd_cache_test.cpp)
target_link_libraries(gpufeed_cache_system_tests PRIVATE gpufeed_cache)
target_include_directories(gpufeed_cache_system_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/cache)
