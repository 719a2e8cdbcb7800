# gpufeed_bpf_skeleton(NAME SOURCE): compiles bpf/SOURCE with clang for the
# BPF target, strips DWARF (keeps BTF: -g is required for CO-RE), and
# generates NAME.skel.h with bpftool. Exposes an INTERFACE target NAME_skel
# whose include directories hold the skeleton and bpf/diagnose.h.
#
# The object is built for the host's architecture (x86_64 or arm64: the two
# bpf/syscall_nrs.h and bpf/include/gf_vmlinux.h cover); the other one is
# compiled too, as NAME_other_arch, so a change that breaks either fails the
# build.
find_program(GPUFEED_CLANG NAMES clang clang-14 REQUIRED)
find_program(GPUFEED_LLVM_STRIP NAMES llvm-strip llvm-strip-14 REQUIRED)
find_program(GPUFEED_BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(GPUFEED_BPF_ARCH arm64)
  set(GPUFEED_BPF_OTHER_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(GPUFEED_BPF_ARCH x86)
  set(GPUFEED_BPF_OTHER_ARCH arm64)
else()
  message(FATAL_ERROR "gpufeed's BPF programs build for x86_64 and arm64, not ${CMAKE_SYSTEM_PROCESSOR}")
endif()

function(gpufeed_bpf_skeleton name source)
  set(out_dir ${PROJECT_BINARY_DIR}/generated/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  file(GLOB headers ${PROJECT_SOURCE_DIR}/bpf/*.h ${PROJECT_SOURCE_DIR}/bpf/include/*.h)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${GPUFEED_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${GPUFEED_BPF_ARCH} -Wall
            -I${PROJECT_SOURCE_DIR}/bpf/include -I${PROJECT_SOURCE_DIR}/bpf
            -c ${PROJECT_SOURCE_DIR}/bpf/${source} -o ${obj}
    COMMAND ${GPUFEED_LLVM_STRIP} -g ${obj}
    COMMAND sh -c "${GPUFEED_BPFTOOL} gen skeleton ${obj} name gf_${name} > ${skel}.tmp && mv ${skel}.tmp ${skel}"
    DEPENDS ${PROJECT_SOURCE_DIR}/bpf/${source} ${headers}
    COMMENT "Building BPF skeleton ${name}"
    VERBATIM)
  set(other ${out_dir}/${name}.${GPUFEED_BPF_OTHER_ARCH}.bpf.o)
  add_custom_command(
    OUTPUT ${other}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${GPUFEED_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${GPUFEED_BPF_OTHER_ARCH} -Wall -Werror
            -I${PROJECT_SOURCE_DIR}/bpf/include -I${PROJECT_SOURCE_DIR}/bpf
            -c ${PROJECT_SOURCE_DIR}/bpf/${source} -o ${other}
    DEPENDS ${PROJECT_SOURCE_DIR}/bpf/${source} ${headers}
    COMMENT "Compiling BPF program ${name} for ${GPUFEED_BPF_OTHER_ARCH} (a build check)"
    VERBATIM)
  add_custom_target(${name}_other_arch ALL DEPENDS ${other})
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir} ${PROJECT_SOURCE_DIR}/bpf)
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
