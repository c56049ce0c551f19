# gtest_discover_suites(TARGET [PROPERTIES name value...]): one ctest test per GoogleTest suite
# of TARGET, named after the suite and run as TARGET --gtest_filter=SUITE.*, found by listing the
# tests once TARGET is built. A test program pays a quarter of a second before its first test
# (libtorch registers its operators), so a process per suite instead of one per test takes
# minutes off the test run on two cores; a failure names its test in the output as before.
set(_gtest_suites_script ${CMAKE_CURRENT_LIST_DIR}/GTestSuitesList.cmake)

function(gtest_discover_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PROPERTIES")
  set(listed ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake)
  add_custom_command(
    TARGET ${target} POST_BUILD BYPRODUCTS ${listed}
    COMMAND ${CMAKE_COMMAND} -D "PROGRAM=$<TARGET_FILE:${target}>" -D "OUT=${listed}"
            -D "PROPERTIES=${arg_PROPERTIES}" -P ${_gtest_suites_script}
    VERBATIM)
  file(WRITE ${include_file}
       "if(EXISTS \"${listed}\")\n  include(\"${listed}\")\nelse()\n  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
