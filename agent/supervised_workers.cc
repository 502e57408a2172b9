#include "agent/supervised_workers.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <filesystem>

#include "agent/failure_wire.h"

namespace ddp::agent {

SupervisedWorkers::SupervisedWorkers(boost::asio::io_context& io, const AgentConfig& config,
                                     RunSetup& setup, proc::DeathWatch* death_watch)
    : io_(io),
      config_(config),
      setup_(setup),
      router_(config, config.log_dir.has_value()),
      launcher_(io, *this, death_watch) {}

SupervisedWorkers::~SupervisedWorkers() { launcher_.kill_strays(); }

void SupervisedWorkers::start(const Round& round) {
  GroupContext& g = setup_.group;
  g.group_rank = round.group_rank;
  g.group_world_size = round.group_world_size;
  g.global_rank_base = round.rank_offset;
  g.world_size = round.world_size;
  g.master_addr = round.store_addr;
  g.master_port = round.store_port;
  attempt_ = round.restart_count;
  SupervisorOptions options{config_.nproc_per_node, config_.shutdown_timeout};
  groups_.push_back(std::make_unique<Supervisor>(
      io_, launcher_, options,
      [this](int attempt, int local_rank) { return setup_.launch_spec(attempt, local_rank); },
      [this](int attempt) {
        router_.end_attempt();
        // A reused --log-dir may hold an error file of an earlier run: never report it.
        for (int rank = 0; rank < config_.nproc_per_node; ++rank) {
          std::error_code ignored;
          std::filesystem::remove(setup_.error_file(attempt, rank), ignored);
        }
        return router_.begin_attempt(setup_.attempt_dir(attempt));
      },
      [this](const Outcome& outcome) { on_group_done(outcome); }));
  groups_.back()->start(attempt_);
}

bool SupervisedWorkers::live() const {
  return !groups_.empty() && groups_.back()->phase() != Supervisor::Phase::kDone;
}

void SupervisedWorkers::stop(int signal) {
  if (live()) groups_.back()->interrupt(signal);
}

void SupervisedWorkers::kill_now() {
  if (live()) groups_.back()->kill_now();
  launcher_.kill_strays();
}

void SupervisedWorkers::on_group_done(const Outcome& outcome) {
  router_.end_attempt();
  launcher_.kill_strays();
  WorkersResult result{outcome, {}};
  if (outcome.kind == Outcome::Kind::kFailed) {
    result.failures = to_wire_failures(outcome, setup_, attempt_);
  } else if (outcome.kind == Outcome::Kind::kError) {
    rendezvous::membership::Failure f;
    f.exit_code = 1;
    f.rank = static_cast<std::uint32_t>(setup_.group.global_rank_base);
    f.time =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
    f.message = outcome.error.message();
    result.failures.push_back(std::move(f));
  }
  // Posted: a group that could not start ends inside start(), and workers.h promises never.
  boost::asio::post(io_, [this, result = std::move(result)] {
    if (events_ != nullptr) events_->on_workers_done(result);
  });
}

void SupervisedWorkers::on_output(int id, proc::StreamId stream, std::string_view bytes) {
  router_.write(id, stream, bytes);
}

void SupervisedWorkers::on_output_end(int id, proc::StreamId stream) {
  router_.end_stream(id, stream);
}

void SupervisedWorkers::on_exit(int id, proc::ExitStatus status) {
  if (!groups_.empty()) groups_.back()->on_exit(id, status);
}

}  // namespace ddp::agent
