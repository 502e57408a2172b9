// Linked into the release programs only (cmake/StaticRelease.cmake). A static libstdc++ and
// libgcc built on glibc >= 2.36 call two functions newer than glibc 2.34; the definitions here
// take their place, so the programs also run on glibc 2.34 and 2.35 (RHEL 9, Ubuntu 22.04):
//  - arc4random (2.36), for std::random_device: a word from getrandom(2) (2.25);
//  - _dl_find_object (2.35), with which the unwinder finds the exception tables of the code at
//    an address: found here with dl_iterate_phdr (2.2.4), which is what that unwinder used
//    before 2.35. It fills what the unwinder reads (the object's extent and its
//    PT_GNU_EH_FRAME); dlfo_link_map stays null.
#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" std::uint32_t arc4random() {
  std::uint32_t value = 0;
  auto* out = reinterpret_cast<unsigned char*>(&value);
  std::size_t got = 0;
  while (got < sizeof value) {
    const ssize_t n = getrandom(out + got, sizeof value - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      std::abort();  // no getrandom (a kernel before 3.17): no randomness to give
    }
  }
  return value;
}

namespace {

struct Search {
  std::uintptr_t address = 0;
  dl_find_object* result = nullptr;
};

int find_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
  bool contains = false;
  void* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD) {
      const std::uintptr_t end = start + segment.p_memsz;
      low = start < low ? start : low;
      high = end > high ? end : high;
      contains = contains || (search->address >= start && search->address < end);
    } else if (segment.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<void*>(start);
    }
  }
  if (!contains) return 0;
  *search->result = dl_find_object{};
  search->result->dlfo_map_start = reinterpret_cast<void*>(low);
  search->result->dlfo_map_end = reinterpret_cast<void*>(high);
  search->result->dlfo_eh_frame = eh_frame;
  return 1;
}

}  // namespace

extern "C" int _dl_find_object(void* address, dl_find_object* result) noexcept {
  Search search{reinterpret_cast<std::uintptr_t>(address), result};
  return dl_iterate_phdr(find_object, &search) == 1 ? 0 : -1;
}
