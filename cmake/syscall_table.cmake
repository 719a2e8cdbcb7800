# Generates the x86_64 syscall-number -> name table from the kernel UAPI
# header, so names always match the numbers the BPF programs see.
# Usage: cmake -DHEADER=.../unistd_64.h -DOUT=.../syscall_table.inc -P syscall_table.cmake
file(STRINGS "${HEADER}" lines REGEX "^#define __NR_[a-z0-9_]+ [0-9]+$")
set(body "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^#define __NR_([a-z0-9_]+) ([0-9]+)$" "{\\2, \"\\1\"}," entry "${line}")
  string(APPEND body "  ${entry}\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from ${HEADER}; do not edit.\n${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
