#include "proc/process_state.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

namespace ddp::proc {

std::string ProcessState::describe_state() const {
  // The kernel's task_state_array (fs/proc/array.c).
  static constexpr std::pair<char, const char*> kNames[] = {
      {'R', "running"}, {'S', "sleeping"},     {'D', "disk sleep"},
      {'T', "stopped"}, {'t', "tracing stop"}, {'X', "dead"},
      {'Z', "zombie"},  {'P', "parked"},       {'I', "idle"}};
  const char* name = "unknown";
  for (const auto& [letter, text] : kNames) {
    if (letter == state) name = text;
  }
  return std::string(1, state) + " (" + name + ")";
}

std::optional<ProcessState> read_process_state(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream stat(dir + "/stat");
  const std::string line{std::istreambuf_iterator<char>(stat), std::istreambuf_iterator<char>()};
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return std::nullopt;
  ProcessState out;
  std::istringstream rest(line.substr(close + 2));
  if (!(rest >> out.state >> out.ppid)) return std::nullopt;
  std::ifstream wchan(dir + "/wchan");
  std::getline(wchan, out.wchan);
  if (out.wchan == "0") out.wchan.clear();  // not sleeping
  return out;
}

}  // namespace ddp::proc
