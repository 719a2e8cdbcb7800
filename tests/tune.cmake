# tune: the DataLoader model, search and config on plain values.
gpufeed_test_suite(gpufeed_tune_unit_tests unit
  unit/tune_calibration_test.cpp
  unit/tune_config_test.cpp
  unit/tune_cpu_from_trials_test.cpp
  unit/tune_from_diagnosis_test.cpp
  unit/tune_job_cpu_test.cpp
  unit/tune_model_test.cpp
  unit/tune_printed_metric_test.cpp
  unit/tune_pytorch_probe_test.cpp
  unit/tune_search_test.cpp
  unit/tune_wait_metric_test.cpp)
# Serial: these tunes run real trials and choose by measured throughput, so
# another test on the same two cores moves their choice (ctest -j2 put 6
# workers above 4 in TuneCli.FromDiagnosisTakesTheLoopStep, which alone
# chooses 2-4).
gpufeed_test_suite(gpufeed_tune_system_tests system SERIAL
  system/tune_cli_test.cpp
  system/tune_pytorch_probe_test.cpp
  system/tune_trial_length_test.cpp)
# The pure-Python helper that applies a config to a DataLoader (standard library only).
add_test(NAME python.gpufeed_config
         COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/python/test_gpufeed_config.py)
set_tests_properties(python.gpufeed_config PROPERTIES LABELS unit)
# The PyTorch probe's geometry and arguments (its measurement: tune_pytorch_probe_test.cpp).
add_test(NAME python.gpufeed_pytorch_probe
         COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/python/test_gpufeed_pytorch_probe.py)
set_tests_properties(python.gpufeed_pytorch_probe PROPERTIES LABELS unit)
