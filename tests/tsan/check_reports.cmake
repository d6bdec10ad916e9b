# tsan_reports_none: fails when any process of the TSan build's tests wrote a race report (see tsan.cmake).
# Prints every report and removes it, so each one fails exactly one run.
#   cmake -DREPORTS=<folder> -P check_reports.cmake
file(GLOB reports "${REPORTS}/race.*")
if(NOT reports)
  message(STATUS "no ThreadSanitizer report in ${REPORTS}")
  return()
endif()
list(LENGTH reports count)
foreach(report ${reports})
  file(READ ${report} text)
  message("==== ${report}\n${text}")
  file(REMOVE ${report})
endforeach()
message(FATAL_ERROR "${count} ThreadSanitizer report(s) from the tests' processes (printed above)")
