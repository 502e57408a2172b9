// Test harness: runs `world` ranks as threads of this process, each with a real Gloo process
// group over a shared in-memory c10d::HashStore. The first failure of any rank is rethrown.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <vector>

#include "ddp/process_group.h"

namespace ddp::testing {

// Catch2 assertions are not thread-safe: rank threads report failures by throwing.
inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("expectation failed: " + what);
}

inline void run_ranks(int world, const std::function<void(WorkerContext&)>& body,
                      int restart_count = 0) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        WorkerEnv env;
        env.rank = rank;
        env.local_rank = rank;
        env.world_size = world;
        env.local_world_size = world;
        env.restart_count = restart_count;
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>("default_pg", store);
        auto group = make_gloo_group(c10::make_intrusive<c10d::PrefixStore>("0", prefixed), rank,
                                     world, std::chrono::seconds(30));
        WorkerContext ctx(env, prefixed, group, Backend::kGloo);
        body(ctx);
      } catch (const std::exception&) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ddp::testing
