# tune: the DataLoader model, search and config on plain values.
gpufeed_test_suite(gpufeed_tune_unit_tests unit
  unit/tune_model_test.cpp
  unit/tune_search_test.cpp)
gpufeed_test_suite(gpufeed_tune_system_tests system
  system/tune_cli_test.cpp)
