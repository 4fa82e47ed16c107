# tests/python: the Python module (import faster), where it is built.  python_loader_test.cpp holds
# its batches against the trainer's loader; pytest runs test_*.py (torchvision, training, Gloo,
# bad input) in the python3 it was built for.  resnet_reference.py and thinnet_reference.py are
# other tests' references.
if(FASTER_PYTHON_BUILT)
  list(APPEND FASTER_TORCH_TEST_SOURCES python/python_loader_test.cpp)
  list(APPEND FASTER_TEST_DEFS FASTER_PYTHON="${FASTER_TORCH_PYTHON}"
       FASTER_PYTHON_DIR="${FASTER_PYTHON_DIR}")
  add_test(NAME Python.ImageLoader
           COMMAND ${FASTER_TORCH_PYTHON} -m pytest -q -p no:cacheprovider
                   ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(Python.ImageLoader PROPERTIES TIMEOUT 600 ENVIRONMENT
                       "PYTHONPATH=${FASTER_PYTHON_DIR};FASTER_BIN=$<TARGET_FILE:faster>")
endif()
