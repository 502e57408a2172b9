// RdzvClient's receive side: waits for the socket to become readable, drains it, and decodes
// pushes (rendezvous/membership/wire.h) and framed TCPStore replies (rendezvous/framer.h).
#include <array>
#include <utility>

#include "rendezvous/framer.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/rdzv_client.h"

namespace ddp::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;

void RdzvClient::read_more() {
  socket_.async_wait(
      tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (self->ended_) return;
        if (!ec) {
          std::array<char, 16384> buffer;  // drained at once; only an unfinished tail is kept
          const std::size_t n = self->socket_.read_some(asio::buffer(buffer), ec);
          if (!ec) {
            self->last_rx_ = Clock::now();
            self->in_.append(buffer.data(), n);
            if (self->consume()) self->read_more();
            return;
          }
        }
        self->end(peer_gone(
            "lost the rendezvous daemon at " + self->peer_ + ": " +
            (ec == asio::error::eof ? std::string("it closed the connection") : ec.message())));
      });
}

bool RdzvClient::consume() {
  std::size_t used = 0;
  const std::string_view view(in_);
  while (used < view.size() && !ended_) {
    const std::string_view rest = view.substr(used);
    if (static_cast<std::uint8_t>(rest.front()) == kStoreReplyType) {
      codec::Reader in(rest);
      in.get<std::uint8_t>();
      std::string reply = in.str("store reply", rest.size());
      if (!in.ok()) break;
      used += in.pos();
      on_store_reply(std::move(reply));
      continue;
    }
    if (version_pending_) {
      const std::size_t used_by_version = consume_version(rest);
      if (used_by_version == 0) break;
      used += used_by_version;
      continue;
    }
    if (static_cast<std::uint8_t>(rest.front()) == kChallengeType) {
      auto challenge = parse_challenge(rest);
      if (challenge.state == codec::DecodeState::kIncomplete) break;
      if (challenge.state == codec::DecodeState::kError) {
        end(protocol_error("bad CHALLENGE from the rendezvous daemon at " + peer_ + ": " +
                           challenge.error));
        return false;
      }
      used += challenge.consumed;
      on_challenge(challenge.value);
      continue;
    }
    auto decoded = rendezvous::membership::decode_push(rest);
    if (decoded.state == codec::DecodeState::kIncomplete) break;
    if (decoded.state == codec::DecodeState::kError) {
      end(protocol_error("undecodable push from the rendezvous daemon at " + peer_ + ": " +
                         decoded.error + "; is it a ddprun daemon of the same version?"));
      return false;
    }
    used += decoded.consumed;
    if (!on_push(std::move(decoded.value))) return false;
  }
  in_.erase(0, used);
  if (in_.empty()) std::string().swap(in_);
  return !ended_;
}

std::size_t RdzvClient::consume_version(std::string_view rest) {
  if (static_cast<std::uint8_t>(rest.front()) == rendezvous::membership::kErrorType) {
    // Protocol 1's ERROR: a ddprun 0.1 daemon refusing HELLO (its removed AUTH_OPEN).
    auto refusal = rendezvous::membership::decode_legacy_error(rest);
    if (refusal.state == codec::DecodeState::kIncomplete) return 0;
    on_version(std::nullopt);
    return refusal.state == codec::DecodeState::kComplete ? refusal.consumed : rest.size();
  }
  auto version = rendezvous::membership::decode_version(rest);
  if (version.state == codec::DecodeState::kIncomplete) return 0;
  if (version.state == codec::DecodeState::kError) {
    end(protocol_error("the rendezvous daemon at " + peer_ +
                       " did not answer HELLO with VERSION (" + version.error +
                       "); is it a ddprun daemon?"));
    return rest.size();
  }
  on_version(std::move(version.value));
  return version.consumed;
}

bool RdzvClient::on_push(rendezvous::membership::Payload push) {
  if (join_done_) {
    if (auto* joined = std::get_if<rendezvous::membership::Joined>(&push)) {
      auto done = std::move(join_done_);
      join_done_ = nullptr;
      done(*joined);
      return !ended_;
    }
    if (auto* error = std::get_if<rendezvous::membership::ErrorEvent>(&push)) {
      auto done = std::move(join_done_);
      join_done_ = nullptr;
      stop_heartbeats();  // not a member: heartbeats would only earn errors
      done(Status(error->code, error->message));
      return !ended_;
    }
  }
  if (handlers_.on_event) handlers_.on_event(push);
  return !ended_;
}

void RdzvClient::on_store_reply(std::string reply) {
  if (!store_in_flight_ || store_calls_.empty()) {
    end(protocol_error("the rendezvous daemon at " + peer_ + " sent a store reply to no query"));
    return;
  }
  StoreCall call = std::move(store_calls_.front());
  store_calls_.pop_front();
  store_in_flight_ = false;
  owed_since_.reset();
  send_next_store();
  if (call.done) call.done(std::move(reply));
}

}  // namespace ddp::rendezvous
