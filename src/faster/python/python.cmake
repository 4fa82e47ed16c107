# The Python module (`import faster`): faster's loader as torch tensors, for any PyTorch model.
# Built where a python3 imports the very LibTorch faster links (Debian's python3-torch beside
# libtorch-dev; the PyTorch whose CMake files a CUDA build takes), with its headers and pybind11:
# build/python/faster/ then holds the package (PYTHONPATH=build/python).  Elsewhere it is skipped,
# saying why.
option(FASTER_PYTHON "Build the Python module (import faster)" ON)
set(FASTER_PYTHON_BUILT OFF)

# The python3 whose torch is this LibTorch: the first of those asked that imports torch from the
# folder holding the c10 library faster links.
function(faster_find_torch_python out_python out_torch_dir)
  get_target_property(c10_location c10 IMPORTED_LOCATION)
  if(NOT c10_location)
    get_target_property(c10_location c10 IMPORTED_LOCATION_RELEASE)
  endif()
  if(NOT c10_location)
    find_library(c10_location c10 PATHS "${TORCH_INSTALL_PREFIX}/lib")
  endif()
  get_filename_component(c10_real "${c10_location}" REALPATH)
  set(candidates ${Python3_EXECUTABLE} python3 /usr/bin/python3)
  foreach(candidate IN LISTS candidates)
    find_program(python_path NAMES ${candidate} NO_CACHE)
    if(NOT python_path)
      continue()
    endif()
    execute_process(
      COMMAND "${python_path}" -c
              "import os, torch; print(os.path.realpath(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libc10.so')))"
      OUTPUT_VARIABLE torch_c10 OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
    if(NOT failed AND torch_c10 STREQUAL c10_real)
      get_filename_component(torch_lib "${torch_c10}" DIRECTORY)
      set(${out_python} "${python_path}" PARENT_SCOPE)
      execute_process(COMMAND "${python_path}" -c "import os, torch; print(os.path.dirname(torch.__file__))"
                      OUTPUT_VARIABLE torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
      set(${out_torch_dir} "${torch_dir}" PARENT_SCOPE)
      return()
    endif()
    unset(python_path)
  endforeach()
  set(${out_python} "" PARENT_SCOPE)
endfunction()

if(FASTER_PYTHON)
  faster_find_torch_python(FASTER_TORCH_PYTHON FASTER_TORCH_PY_DIR)
  set(why "")
  if(NOT FASTER_TORCH_PYTHON)
    set(why "no python3 imports the LibTorch faster links (python3-torch on Debian)")
  else()
    set(Python3_EXECUTABLE "${FASTER_TORCH_PYTHON}")
    find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
    find_library(FASTER_TORCH_PYTHON_LIBRARY torch_python
                 PATHS "${FASTER_TORCH_PY_DIR}/lib" "${TORCH_INSTALL_PREFIX}/lib")
    find_path(FASTER_PYBIND11_INCLUDE pybind11/pybind11.h
              PATHS ${TORCH_INCLUDE_DIRS} "${FASTER_TORCH_PY_DIR}/include")
    if(NOT Python3_Development.Module_FOUND)
      set(why "no Python headers for ${FASTER_TORCH_PYTHON} (python3-dev on Debian)")
    elseif(NOT FASTER_TORCH_PYTHON_LIBRARY)
      set(why "no libtorch_python beside ${FASTER_TORCH_PY_DIR}")
    elseif(NOT FASTER_PYBIND11_INCLUDE)
      set(why "no pybind11 headers (pybind11-dev on Debian)")
    endif()
  endif()
  if(why)
    message(STATUS "faster: no Python module: ${why}")
  else()
    set(FASTER_PYTHON_BUILT ON)
    set(FASTER_PYTHON_DIR ${CMAKE_BINARY_DIR}/python)
    Python3_add_library(faster_python MODULE src/faster/python/module.cpp
                        src/faster/python/loader.cpp)
    set_target_properties(faster_python PROPERTIES OUTPUT_NAME _faster
                          LIBRARY_OUTPUT_DIRECTORY ${FASTER_PYTHON_DIR}/faster
                          BUILD_RPATH "${FASTER_TORCH_PY_DIR}/lib")
    target_include_directories(faster_python PRIVATE ${FASTER_PYBIND11_INCLUDE})
    target_link_libraries(faster_python PRIVATE faster_lib ${FASTER_TORCH_PYTHON_LIBRARY})
    target_compile_options(faster_python PRIVATE ${FASTER_WARNINGS} -fvisibility=hidden)
    # The package's Python files are links to the source, so an edit needs no rebuild.
    file(MAKE_DIRECTORY ${FASTER_PYTHON_DIR}/faster)
    file(GLOB faster_py_files RELATIVE ${CMAKE_SOURCE_DIR}/python/faster
         ${CMAKE_SOURCE_DIR}/python/faster/*.py)
    foreach(f IN LISTS faster_py_files)
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/python/faster/${f} ${FASTER_PYTHON_DIR}/faster/${f}
           SYMBOLIC)
    endforeach()
    message(STATUS "faster: Python module for ${FASTER_TORCH_PYTHON} in ${FASTER_PYTHON_DIR}")
  endif()
endif()
