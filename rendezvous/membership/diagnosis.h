// What a failed worker left on its node, carried by its Failure so that one place shows it for
// the whole job (docs/diagnosis.md): its last lines of output and the head of its stack file.
// Bounded so that a report stays a small frame and a daemon's memory stays flat: every list
// holds at most kDiagnosisLines lines of at most kDiagnosisLineBytes each (a longer line is cut
// at a UTF-8 character boundary and ends in "..."), kDiagnosisBytes of line text in all. The
// agent bounds what it sends (LineTail, head_lines), the decoder refuses more. Pure.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::rendezvous::membership {

inline constexpr std::size_t kDiagnosisLines = 40;
inline constexpr std::size_t kDiagnosisLineBytes = 240;
inline constexpr std::size_t kDiagnosisBytes = 4096;
// A round's failures that keep their Diagnosis in a Job: the first this many to arrive, and
// the root cause whenever it arrives; the others lose it, so a job's memory and its view stay
// small whatever the number of failed workers. An agent sends no more in one report.
inline constexpr std::size_t kDiagnosedFailures = 16;

struct Diagnosis {
  std::vector<std::string> last_lines;  // its last lines, stdout and stderr as they came
  std::vector<std::string> stack_head;  // the first lines of its stack file (docs/hangs.md)
  bool empty() const { return last_lines.empty() && stack_head.empty(); }
  bool operator==(const Diagnosis&) const = default;
};

// `line` cut to kDiagnosisLineBytes.
std::string bounded_line(std::string_view line);

// The first lines of `text` within the bounds.
std::vector<std::string> head_lines(std::string_view text);

// The last lines of a stream within the bounds, the oldest dropped first. O(1) per line.
class LineTail {
 public:
  void add(std::string_view line);
  std::vector<std::string> lines() const { return {lines_.begin(), lines_.end()}; }
  void clear();

 private:
  std::deque<std::string> lines_;
  std::size_t bytes_ = 0;
};

}  // namespace ddp::rendezvous::membership
