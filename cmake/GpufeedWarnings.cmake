# Warnings for gpufeed's own targets. Third-party headers come in as SYSTEM
# includes (imported targets), so their warnings do not drown ours.
function(gpufeed_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align -Wformat=2)
  if(GPUFEED_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
