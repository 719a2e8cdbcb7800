# The S3 store (src/s3). Unit: URL and query encoding, XML, backoff,
# credentials and configuration, without a server. System: against s3rver
# (skipped with the install command when it is missing), through the fault
# proxy, and the SigV4 signature against botocore's reference signer.
find_package(CURL REQUIRED)

gpufeed_test_suite(gpufeed_s3_unit_tests unit
  s3/s3_config_test.cpp
  s3/s3_retry_test.cpp
  s3/s3_url_test.cpp
  s3/s3_xml_test.cpp)

gpufeed_test_suite(gpufeed_s3_system_tests system
  support/fault_proxy.cpp
  support/s3rver.cpp
  s3/s3_client_faults_test.cpp
  s3/s3_config_secrets_test.cpp
  s3/s3_client_signing_test.cpp
  s3/s3_source_test.cpp)

# Both suites test the store's internals too (src/s3/*.hpp).
foreach(suite gpufeed_s3_unit_tests gpufeed_s3_system_tests)
  target_link_libraries(${suite} PRIVATE gpufeed_s3 CURL::libcurl)
  target_include_directories(${suite} PRIVATE ${PROJECT_SOURCE_DIR}/src/s3)
endforeach()
