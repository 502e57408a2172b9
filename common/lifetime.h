// The one lifetime idiom for asynchronous work started by an object that is owned by value
// (a member, a unique_ptr), not by a shared_ptr: the object holds a Lifetime (declare it last,
// so it ends first), and every completion handler or coroutine it starts touches the object
// only while that Lifetime lasts.
//
//   timer_.async_wait(life_.guard([this](error_code ec) { ... }));   // dropped once ended
//   auto alive = life_.watch();  co_await ...;  if (!alive) co_return;   // in a coroutine
//
// end() ends it early (a stop() after which no callback may run); the destructor ends it too.
// Objects owned by a shared_ptr keep themselves alive instead (shared_from_this) and need none.
//
// Threading: one io_context thread; a Watch is tested on the thread that owns the object.
#pragma once

#include <memory>
#include <utility>

namespace ddp {

class Lifetime {
 public:
  // True while the owner's Lifetime has not ended.
  class Watch {
   public:
    explicit operator bool() const { return !token_.expired(); }

   private:
    friend class Lifetime;
    explicit Watch(std::weak_ptr<const int> token) : token_(std::move(token)) {}
    std::weak_ptr<const int> token_;
  };

  Lifetime() = default;
  Lifetime(const Lifetime&) = delete;
  Lifetime& operator=(const Lifetime&) = delete;

  Watch watch() const { return Watch(token_); }

  // `f` wrapped so that a call after end() (or the owner's destruction) does nothing.
  template <class F>
  auto guard(F f) const {
    return [alive = watch(), f = std::move(f)](auto&&... args) mutable {
      if (alive) f(std::forward<decltype(args)>(args)...);
    };
  }

  // Every Watch taken so far reads false from now on; new ones too.
  void end() { token_.reset(); }

 private:
  std::shared_ptr<const int> token_ = std::make_shared<const int>(0);
};

}  // namespace ddp
