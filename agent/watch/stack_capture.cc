#include "agent/watch/stack_capture.h"

#include <signal.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace ddp::agent {

namespace {
using namespace std::chrono_literals;
constexpr auto kQuiet = 25ms;  // a dump ending in '\n' is complete this long after its last byte
constexpr auto kPythonLimit = 3s;  // a worker that writes nothing by then gets a note
}  // namespace

std::string with_source_lines(const std::string& traceback) {
  static const std::regex frame(R"re(^\s+File "([^"]+)", line (\d+) in .*$)re");
  std::map<std::string, std::vector<std::string>> files;
  std::istringstream in(traceback);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    out += line + "\n";
    std::smatch m;
    if (!std::regex_match(line, m, frame)) continue;
    auto [it, fresh] = files.try_emplace(m[1].str());
    if (fresh) {
      std::ifstream source(m[1].str());
      for (std::string text; std::getline(source, text);) it->second.push_back(text);
    }
    const std::size_t n = std::stoul(m[2].str());
    if (n == 0 || n > it->second.size()) continue;
    std::string code = it->second[n - 1];
    code.erase(0, code.find_first_not_of(" \t"));
    if (!code.empty()) out += "    " + code + "\n";
  }
  return out;
}

struct StackCapture::Pending {
  std::map<int, CapturedStack> stacks;  // by local rank
  std::map<int, std::size_t> offsets;   // Python: received_ size at the signal
  std::map<int, std::unique_ptr<boost::asio::steady_timer>> timers;  // Python: quiet / limit
  std::set<int> finished;
  int outstanding = 0;
  std::function<void(std::vector<CapturedStack>)> done;
};

StackCapture::StackCapture(boost::asio::io_context& io, int python_signal, RunGdb run_gdb)
    : io_(io), python_signal_(python_signal), run_gdb_(std::move(run_gdb)) {}

Status StackCapture::open_python_channel(int local_rank, const std::filesystem::path& path) {
  auto fifo = FifoReader::open(
      io_, path, "stack channel",
      [this, local_rank](std::string_view bytes) { python_bytes(local_rank, bytes); });
  if (!fifo) return fifo.status();
  channels_[local_rank] = std::move(fifo).value();
  return Status::ok();
}

void StackCapture::capture(std::vector<StackTarget> targets,
                           std::function<void(std::vector<CapturedStack>)> done) {
  auto p = std::make_shared<Pending>();
  p->done = std::move(done);
  p->outstanding = static_cast<int>(targets.size());
  pending_ = p;
  if (targets.empty()) {
    boost::asio::post(io_, [p] { p->done({}); });
    return;
  }
  for (const auto& t : targets) {
    p->stacks[t.local_rank] = CapturedStack{t, {}, {}};
    if (t.python && channels_.contains(t.local_rank)) {
      p->offsets[t.local_rank] = received_[t.local_rank].size();
      auto timer = std::make_unique<boost::asio::steady_timer>(io_, kPythonLimit);
      timer->async_wait(
          life_.guard([this, p, rank = t.local_rank](const boost::system::error_code& ec) {
            if (!ec && pending_ == p) finish_one(rank);
          }));
      p->timers[t.local_rank] = std::move(timer);
      if (::kill(t.pid, python_signal_) != 0) {
        p->stacks[t.local_rank].note = std::string("cannot signal it: ") + std::strerror(errno);
        p->timers.erase(t.local_rank);
        boost::asio::post(io_, life_.guard([this, p, rank = t.local_rank] {
          if (pending_ == p) finish_one(rank);
        }));
      }
      continue;
    }
    if (!run_gdb_) {
      p->stacks[t.local_rank].note = "no stack could be taken (no debugger available)";
      boost::asio::post(io_, life_.guard([this, p, rank = t.local_rank] {
        if (pending_ == p) finish_one(rank);
      }));
      continue;
    }
    run_gdb_(t.pid, life_.guard([this, p, rank = t.local_rank](Result<std::string> out) {
      if (pending_ != p) return;
      if (out) {
        p->stacks[rank].text = std::move(out).value();
        p->stacks[rank].note = "taken with gdb";
      } else {
        p->stacks[rank].note = "no stack could be taken: " + out.status().message();
      }
      finish_one(rank);
    }));
  }
}

void StackCapture::python_bytes(int local_rank, std::string_view bytes) {
  received_[local_rank].append(bytes);
  auto p = pending_;
  if (!p || !p->timers.contains(local_rank) || !p->offsets.contains(local_rank)) return;
  // A dump is arriving: complete once it ends a line and the channel has been quiet for
  // kQuiet (faulthandler writes a frame line in several pieces; a worker descheduled inside
  // one leaves a partial line, and the 3 s limit stays armed meanwhile).
  if (received_[local_rank].back() != '\n') return;
  auto& timer = p->timers[local_rank];
  timer->expires_after(kQuiet);
  timer->async_wait(life_.guard([this, p, local_rank](const boost::system::error_code& ec) {
    if (!ec && pending_ == p) finish_one(local_rank);
  }));
}

void StackCapture::finish_one(int local_rank) {
  auto p = pending_;
  if (!p || !p->finished.insert(local_rank).second) return;
  auto offset = p->offsets.find(local_rank);
  if (offset != p->offsets.end()) {  // Python: what arrived since the signal
    const std::string& all = received_[local_rank];
    CapturedStack& s = p->stacks[local_rank];
    s.text = with_source_lines(all.substr(std::min(offset->second, all.size())));
    if (!s.text.empty()) {
      s.note = "Python traceback (faulthandler)";
    } else if (s.note.empty()) {
      s.note = "no stack could be taken: the worker wrote none within 3 s";
    }
    p->offsets.erase(offset);
    p->timers.erase(local_rank);
  }
  if (--p->outstanding > 0) return;
  std::vector<CapturedStack> out;
  for (auto& [rank, s] : p->stacks) out.push_back(std::move(s));
  pending_.reset();
  p->done(std::move(out));
}

}  // namespace ddp::agent
