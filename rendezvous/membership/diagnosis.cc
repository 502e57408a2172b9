#include "rendezvous/membership/diagnosis.h"

namespace ddp::rendezvous::membership {

std::string bounded_line(std::string_view line) {
  if (line.size() <= kDiagnosisLineBytes) return std::string(line);
  std::size_t cut = kDiagnosisLineBytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut)) + "...";
}

std::vector<std::string> head_lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t bytes = 0;
  while (!text.empty() && out.size() < kDiagnosisLines) {
    const std::size_t end = text.find('\n');
    std::string line = bounded_line(text.substr(0, end));
    if (bytes + line.size() > kDiagnosisBytes) break;
    bytes += line.size();
    out.push_back(std::move(line));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return out;
}

void LineTail::add(std::string_view line) {
  lines_.push_back(bounded_line(line));
  bytes_ += lines_.back().size();
  while (lines_.size() > kDiagnosisLines || bytes_ > kDiagnosisBytes) {
    bytes_ -= lines_.front().size();
    lines_.pop_front();
  }
}

void LineTail::clear() {
  lines_.clear();
  bytes_ = 0;
}

}  // namespace ddp::rendezvous::membership
