#include "agent/watch/beat_channel.h"

#include <spdlog/spdlog.h>

#include "common/text.h"

namespace ddp::agent {

namespace {
constexpr std::size_t kMaxBeatLine = 64;
}  // namespace

std::optional<Beat> parse_beat_line(std::string_view line) {
  if (line.size() > kMaxBeatLine) return std::nullopt;
  line = trim(line, " \t\r");
  if (line.empty()) return Beat{};
  const auto step = parse_number<std::int64_t>(line);
  if (!step || *step < 0) return std::nullopt;
  return Beat{*step};
}

Result<std::unique_ptr<BeatChannel>> BeatChannel::open(boost::asio::io_context& io,
                                                       std::filesystem::path path,
                                                       std::string label, OnBeat on_beat) {
  auto channel = std::make_unique<BeatChannel>(std::move(label), std::move(on_beat));
  auto fifo = FifoReader::open(
      io, std::move(path), "heartbeat channel", [c = channel.get()](std::string_view bytes) {
        c->lines_.feed(bytes, [c](std::string_view line) { c->on_line(line); });
      });
  if (!fifo) return fifo.status();
  channel->fifo_ = std::move(fifo).value();
  return channel;
}

void BeatChannel::on_line(std::string_view line) {
  auto beat = parse_beat_line(line);
  if (!beat) {
    if (!warned_) {
      warned_ = true;
      spdlog::warn(
          "{}: ignoring a heartbeat line that is not a step number (further ones are ignored "
          "silently)",
          label_);
    }
    return;
  }
  on_beat_(*beat);
}

}  // namespace ddp::agent
