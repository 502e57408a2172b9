#include "agent/watch/hang_watch.h"

#include <spdlog/spdlog.h>

namespace ddp::agent {

HangWatch::HangWatch(boost::asio::io_context& io, HangLimits limits, int global_rank_base,
                     std::function<void(HangReport)> on_hung, std::function<void()> on_step)
    : io_(io),
      limits_(limits),
      global_rank_base_(global_rank_base),
      on_hung_(std::move(on_hung)),
      on_step_(std::move(on_step)),
      timer_(io) {}

HangWatch::~HangWatch() { timer_.cancel(); }

Status HangWatch::open_channel(int local_rank, const std::filesystem::path& path) {
  if (static_cast<int>(progress_.size()) <= local_rank) {
    progress_.resize(static_cast<std::size_t>(local_rank) + 1);
    channels_.resize(static_cast<std::size_t>(local_rank) + 1);
  }
  progress_[local_rank].rank = global_rank_base_ + local_rank;
  auto channel = BeatChannel::open(io_, path, "local rank " + std::to_string(local_rank),
                                   [this, local_rank](const Beat& b) { on_beat(local_rank, b); });
  if (!channel) return channel.status();
  channels_[local_rank] = std::move(channel).value();
  return Status::ok();
}

void HangWatch::start() {
  judge_.emplace(limits_, std::chrono::steady_clock::now());
  arm();
}

void HangWatch::stop() {
  for (auto& channel : channels_) {
    if (channel) channel->read_pending();
  }
  done_ = true;
  timer_.cancel();
}

void HangWatch::on_beat(int local_rank, const Beat& beat) {
  if (record_beat(progress_[local_rank], beat.step, std::chrono::steady_clock::now(),
                  std::chrono::system_clock::now()) &&
      on_step_)
    on_step_();
  if (!armed_) arm();  // a first beat may create the first deadline
}

rendezvous::membership::Progress HangWatch::step_report(std::uint64_t round) const {
  rendezvous::membership::Progress out{round, {}, {}};
  std::optional<std::chrono::steady_clock::time_point> first, last;
  for (const WorkerProgress& p : progress_) {
    if (!p.step) continue;
    out.ranks.push_back({static_cast<std::uint64_t>(p.rank), *p.step, p.step_time});
    if (!first || p.first_step_beat < *first) first = p.first_step_beat;
    if (!last || p.last_step_beat > *last) last = p.last_step_beat;
  }
  if (first)
    out.stepping = std::chrono::duration_cast<rendezvous::membership::Duration>(*last - *first);
  return out;
}

void HangWatch::arm() {
  if (done_ || !judge_ || !judge_->enabled()) return;
  auto deadline = judge_->next_deadline(progress_);
  if (!deadline) return;
  armed_ = true;
  timer_.expires_at(*deadline);
  timer_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
    if (ec) return;
    armed_ = false;
    check();
  }));
}

void HangWatch::check() {
  if (done_) return;
  const auto now = HangJudge::Clock::now();
  auto hung = judge_->hung(progress_, now);
  if (hung.empty()) return arm();  // beats moved the deadlines on
  HangReport hang = report(hung, now);
  spdlog::error("hung worker(s): {}", hang.descriptions.front());
  on_hung_(std::move(hang));
}

std::optional<HangReport> HangWatch::judge_beside_peer() {
  if (done_ || !judge_) return std::nullopt;
  const auto now = HangJudge::Clock::now();
  auto hung = judge_->hung_beside(progress_, now);
  if (hung.empty()) return std::nullopt;
  HangReport hang = report(hung, now);
  spdlog::error("hung worker(s) beside the one hung on another node: {}",
                hang.descriptions.front());
  return hang;
}

HangReport HangWatch::report(const std::vector<std::size_t>& hung,
                             HangJudge::Clock::time_point now) {
  done_ = true;
  timer_.cancel();
  HangReport report;
  report.kind = HangReport::Kind::kSilent;
  for (std::size_t i : hung) {
    report.local_ranks.push_back(static_cast<int>(i));
    report.descriptions.push_back(HangJudge::describe(progress_, i, now));
    // The culprit's failure time is its last beat; the others' is now, so that the culprit is
    // the root cause wherever the rendezvous compares failure times.
    const bool culprit = report.local_ranks.size() == 1;
    report.stalled.push_back(culprit && progress_[i].beats > 0 ? progress_[i].last_beat_wall
                                                               : std::chrono::system_clock::now());
    report.steps.push_back(progress_[i].step);
  }
  return report;
}

}  // namespace ddp::agent
