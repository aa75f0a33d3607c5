# Read by ctest after the discovered tests (tests/CMakeLists.txt): the tests whose figures are
# ratios of times (a stream's gaps while a long prompt is prefilled, the time to a first token
# with and without the prompt cache) run with no other test beside them, whose load on a
# two-core machine would be their noise.
set_tests_properties(
  "ServePromptCacheCli.ARepeatedSystemPromptComesFromTheCacheWithTheSameAnswer"
  "ServePromptCacheCli.ALongPromptDoesNotStallARunningStream"
  PROPERTIES RUN_SERIAL TRUE)
