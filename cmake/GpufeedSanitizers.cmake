# -DGPUFEED_SANITIZE=ON builds everything (library, binary, tests) with ASan
# and UBSan; UBSan findings abort so a test run cannot hide them.
if(GPUFEED_SANITIZE)
  # -g: a finding's stack names its lines whatever the build type.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
  # Libraries that get dlclose()d stay mapped in this build (see dl_keep.hpp).
  add_compile_definitions(GPUFEED_SANITIZE_BUILD=1)
endif()
