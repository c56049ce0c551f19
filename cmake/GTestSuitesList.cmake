# Run by gtest_discover_suites after its program is built: writes to OUT one add_test a suite
# of PROGRAM --gtest_list_tests, with PROPERTIES (name;value;...) set on each.
execute_process(COMMAND ${PROGRAM} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${status}): ${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # A suite is a line that does not start with a space: "Suite." or "Prefix/Suite/0.  # TypeParam = ...".
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite ${CMAKE_MATCH_1})
    string(APPEND script "add_test([==[${suite}]==] [==[${PROGRAM}]==] [==[--gtest_filter=${suite}.*]==])\n")
    if(PROPERTIES)
      string(APPEND script "set_tests_properties([==[${suite}]==] PROPERTIES ${PROPERTIES})\n")
    endif()
  endif()
endforeach()
file(WRITE ${OUT} "${script}")
