# Sanitizer and fuzzing builds. Included right after the options are declared, before any
# target exists, so the flags below reach every target of the build: the library, the test
# suites, the example and the fuzz target. The library must be instrumented too: most of the
# code under test is there, and ASan/TSan only see memory accesses of instrumented code.
#
#   DECONV_SANITIZE=ON         AddressSanitizer + UndefinedBehaviorSanitizer (gcc or clang)
#   DECONV_SANITIZE_THREAD=ON  ThreadSanitizer (gcc or clang); registers the CTest entries
#                              labelled "tsan" (below) and the target deconv_tsan_tests
#   DECONV_FUZZ=ON             libFuzzer target tests/fuzz (clang only): ASan + UBSan, and
#                              coverage instrumentation of the library
#
# Runtime options: scripts/test.sh sets ASAN_OPTIONS and UBSAN_OPTIONS for the DECONV_SANITIZE
# suites; the fuzz and tsan CTest entries carry their own (ENVIRONMENT). ASan, UBSan and LSan
# need no suppression (LeakSanitizer reports nothing in oneDNN or libgomp); TSan has one, for
# uninstrumented oneDNN: tests/sanitizers/tsan.supp.
option(DECONV_SANITIZE_THREAD "Build everything with ThreadSanitizer" OFF)
get_filename_component(DECONV_SANITIZER_DIR ${CMAKE_CURRENT_LIST_DIR}/../tests/sanitizers ABSOLUTE)

if((DECONV_SANITIZE OR DECONV_FUZZ) AND DECONV_SANITIZE_THREAD)
  message(FATAL_ERROR "DECONV_SANITIZE_THREAD cannot be combined with DECONV_SANITIZE or DECONV_FUZZ "
    "(ThreadSanitizer and AddressSanitizer exclude each other); use separate build folders")
endif()

# -g and frame pointers: readable reports. -fno-sanitize-recover=all: the first UB report aborts,
# so a test cannot pass with one in its output. -O1 (after the build type's -O3, so it wins), as
# the sanitizers' documentation advises: the instrumented -O3 build took 344 s against 187 s
# here and ran the ASan suite only 6% faster (315 s against 334 s).
set(DECONV_SANITIZER_OPT -O1)
set(DECONV_ASAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
  ${DECONV_SANITIZER_OPT})

if(DECONV_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DECONV_FUZZ=ON needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  # fuzzer-no-link: coverage feedback from the library, not only from the fuzz target.
  add_compile_options(${DECONV_ASAN_FLAGS} -fsanitize=fuzzer-no-link)
  # clang links the sanitizer runtime into executables only, so libdeconv.so (linked with
  # -Wl,--no-undefined) takes the shared runtime instead, and so must every executable.
  add_link_options(-fsanitize=address,undefined -shared-libsan)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
    OUTPUT_VARIABLE DECONV_CLANG_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${DECONV_CLANG_ASAN_RUNTIME}")
    message(FATAL_ERROR "clang's shared ASan runtime is missing (Debian: libclang-rt-14-dev)")
  endif()
  get_filename_component(DECONV_CLANG_RUNTIME_DIR ${DECONV_CLANG_ASAN_RUNTIME} DIRECTORY)
  # That runtime lives outside the loader's search path.
  add_link_options(-Wl,-rpath,${DECONV_CLANG_RUNTIME_DIR})
  # OpenMP from libgomp, as in the gcc build and as oneDNN uses it: clang's default (libomp)
  # would put two OpenMP runtimes in one process. Preset for find_package(OpenMP).
  set(OpenMP_C_FLAGS "-fopenmp=libgomp" CACHE STRING "")
  set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "")
  set(OpenMP_C_LIB_NAMES "gomp" CACHE STRING "")
  set(OpenMP_CXX_LIB_NAMES "gomp" CACHE STRING "")
  find_library(OpenMP_gomp_LIBRARY NAMES gomp libgomp.so.1)
elseif(DECONV_SANITIZE)
  add_compile_options(${DECONV_ASAN_FLAGS})
  add_link_options(-fsanitize=address,undefined)
elseif(DECONV_SANITIZE_THREAD)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g ${DECONV_SANITIZER_OPT})
  add_link_options(-fsanitize=thread)

  # The ThreadSanitizer run: the tests whose subject is concurrency, on one OpenMP thread per
  # caller thread. libgomp is not instrumented, so TSan cannot see the synchronisation at the
  # end of an OpenMP parallel region and reports every region with more than one thread as a
  # race (measured: 333 reports in Threads.*, all in '#pragma omp parallel' bodies, and 10 min
  # instead of 2 s). With OMP_NUM_THREADS=1 no libgomp thread exists and every report is about
  # the threads the tests start; tsan.supp only keeps oneDNN's own internals out.
  # Registered at the end of the top-level CMakeLists, when the test targets exist.
  function(deconv_register_tsan_tests)
    if(NOT DECONV_BUILD_TESTS)
      return()
    endif()
    set(env "OMP_NUM_THREADS=1"
      "TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=${DECONV_SANITIZER_DIR}/tsan.supp")
    add_custom_target(deconv_tsan_tests)
    add_test(NAME tsan_threads COMMAND deconv_cpp_tests --gtest_filter=*Threads*)
    add_dependencies(deconv_tsan_tests deconv_cpp_tests)
    set(tests tsan_threads)
    if(TARGET deconv_stress_tests)
      add_test(NAME tsan_stress_concurrency COMMAND deconv_stress_tests --gtest_filter=Concurrency.*)
      # Thread exit (per-thread workspaces and streams torn down) next to a shared handle; 200
      # threads instead of 1000, whose memory bounds are not meant for TSan's allocator.
      add_test(NAME tsan_short_lived_threads COMMAND deconv_stress_tests --gtest_filter=Soak.AThousandShortLivedThreads)
      add_dependencies(deconv_tsan_tests deconv_stress_tests)
      list(APPEND tests tsan_stress_concurrency tsan_short_lived_threads)
    endif()
    set_tests_properties(${tests} PROPERTIES ENVIRONMENT "${env}" LABELS tsan TIMEOUT 900)
    if(TEST tsan_short_lived_threads)
      set_property(TEST tsan_short_lived_threads APPEND PROPERTY ENVIRONMENT DECONV_SOAK_CYCLES=2000)
    endif()
  endfunction()
  cmake_language(DEFER CALL deconv_register_tsan_tests)
endif()
