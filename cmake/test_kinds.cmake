# Every test carries exactly one kind label, so that a developer can run a part of the suite by
# what it costs rather than by folder:
#   unit         no mpirun, no mpisim process: the libraries' own tests (ctest -L unit, under a minute)
#   integration  real programs, mpirun, the mpisim command
#   thirdparty   programs of Debian packages (tests/thirdparty)
#   slow         over ~15 s on a quiet machine, whatever it runs
# The folder labels (cosim, replay, ...) stay beside the kind.
#
# A tests/ folder declares its kinds at its top:
#   mpisim_test_kinds(unit [INTEGRATION regex...] [SLOW regex...] [UNIT regex...])
# the first argument is the folder's default kind; the lists name tests (regular expressions
# over the whole name) of another kind. The labels are set when the folder's CMakeLists.txt ends
# (cmake_language(DEFER): the tests do not exist yet at its top), and a folder with tests that did
# not declare its kinds stops the configuration.

set(MPISIM_TEST_KINDS unit integration thirdparty slow)

function(mpisim_test_kinds default)
  if(NOT default IN_LIST MPISIM_TEST_KINDS)
    message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: mpisim_test_kinds: '${default}' is not a kind (${MPISIM_TEST_KINDS})")
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 _k "" "" "UNIT;INTEGRATION;SLOW;THIRDPARTY")
  if(_k_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: mpisim_test_kinds: unexpected '${_k_UNPARSED_ARGUMENTS}'")
  endif()
  set_property(GLOBAL APPEND PROPERTY MPISIM_KINDS_DECLARED "${CMAKE_CURRENT_SOURCE_DIR}")
  # the exceptions travel to the deferred call as directory variables of this folder
  set(_mpisim_kind_default "${default}" PARENT_SCOPE)
  foreach(_kind UNIT INTEGRATION SLOW THIRDPARTY)
    set(_mpisim_kind_${_kind} "${_k_${_kind}}" PARENT_SCOPE)
  endforeach()
  cmake_language(DEFER CALL _mpisim_apply_test_kinds)
endfunction()

function(_mpisim_apply_test_kinds)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_t ${_tests})
    set(_kind "${_mpisim_kind_default}")
    foreach(_k UNIT INTEGRATION SLOW THIRDPARTY)
      foreach(_re ${_mpisim_kind_${_k}})
        if(_t MATCHES "^(${_re})$")
          string(TOLOWER "${_k}" _kind)
        endif()
      endforeach()
    endforeach()
    get_test_property(${_t} LABELS _labels)
    if(NOT _labels)
      set(_labels "")
    endif()
    foreach(_other ${MPISIM_TEST_KINDS})
      list(REMOVE_ITEM _labels ${_other})
    endforeach()
    list(APPEND _labels ${_kind})
    set_tests_properties(${_t} PROPERTIES LABELS "${_labels}")
  endforeach()
endfunction()

# After every folder was added: each folder with tests declared its kinds.
function(mpisim_check_test_kinds)
  get_property(_declared GLOBAL PROPERTY MPISIM_KINDS_DECLARED)
  foreach(_d ${ARGN})
    get_property(_tests DIRECTORY ${_d} PROPERTY TESTS)
    if(_tests AND NOT _d IN_LIST _declared)
      message(FATAL_ERROR "${_d}/CMakeLists.txt has tests but no mpisim_test_kinds(...) (cmake/test_kinds.cmake)")
    endif()
  endforeach()
endfunction()
