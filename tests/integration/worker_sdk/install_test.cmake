# cmake -DBUILD_DIR=... -DCONSUMER_DIR=... -DWORK_DIR=... -DPYTHON=... -P install_test.cmake
# Installs the worker_sdk component into a fresh prefix, builds a consumer project against it
# with find_package(ddp_worker_sdk) and checks its output against PyTorch's sampler.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix --component worker_sdk)
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${CMAKE_COMMAND} -E env --unset=WORLD_SIZE ${WORK_DIR}/build/consumer)
set(consumer_output "${last_output}")
run(${PYTHON} -c "from torch.utils.data import DistributedSampler as S\nprint(' '.join(map(str, S(range(10), num_replicas=2, rank=1, seed=3))) + ' ')")
if(NOT consumer_output MATCHES "WORLD_SIZE is not set" OR NOT consumer_output MATCHES "${last_output}")
  message(FATAL_ERROR "consumer printed:\n${consumer_output}\nexpected the sampler line:\n${last_output}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "installed package works: ${consumer_output}")
