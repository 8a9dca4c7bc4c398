# One ctest entry per test function of a Python test file, so that a test is written once (its
# `def test_NAME` in the file) and never listed a second time in CMake.
#
#   mpisim_python_tests(<out-var> FILE <file.py> PREFIX <prefix> [LAUNCHER args...] [ARGS args...])
#
# adds a test PREFIX NAME for every top-level `def test_NAME` of the file (tests/list_tests.py
# reads it at configure time and runs nothing), whose command is
# `LAUNCHER... /usr/bin/python3 FILE ARGS... NAME`, and sets <out-var> to the tests' names so that
# the caller sets their properties. Editing the file configures again, so a new test appears.
function(mpisim_python_tests out)
  cmake_parse_arguments(PARSE_ARGV 1 _p "" "FILE;PREFIX" "LAUNCHER;ARGS")
  if(NOT _p_FILE OR _p_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mpisim_python_tests(<out> FILE f.py PREFIX p [LAUNCHER ...] [ARGS ...])")
  endif()
  execute_process(COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/list_tests.py ${_p_FILE}
                  OUTPUT_VARIABLE _names ERROR_VARIABLE _err RESULT_VARIABLE _rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "listing the tests of ${_p_FILE}: ${_err}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_p_FILE})
  string(REPLACE "\n" ";" _names "${_names}")
  set(_added "")
  foreach(_n ${_names})
    add_test(NAME ${_p_PREFIX}${_n} COMMAND ${_p_LAUNCHER} /usr/bin/python3 ${_p_FILE} ${_p_ARGS} ${_n})
    list(APPEND _added ${_p_PREFIX}${_n})
  endforeach()
  set(${out} ${_added} PARENT_SCOPE)
endfunction()
